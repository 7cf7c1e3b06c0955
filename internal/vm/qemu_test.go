package vm

import (
	"slices"
	"strings"
	"testing"
)

func TestUseKVM(t *testing.T) {
	const (
		vmx   = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr vmx ept\n"
		svm   = "processor\t: 0\nflags\t\t: fpu svm npt\n"
		plain = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr hypervisor\nbugs\t\t: vmx_l1tf\n"
	)
	for _, tc := range []struct {
		name     string
		writable bool
		cpuinfo  string
		want     bool
	}{
		{"writable with vmx", true, vmx, true},
		{"writable with svm", true, svm, true},
		{"writable without flags (no nested virt)", true, plain, false},
		{"vmx but not writable", false, vmx, false},
		{"nothing", false, "", false},
	} {
		if got := useKVM(tc.writable, tc.cpuinfo); got != tc.want {
			t.Errorf("%s: useKVM = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestQEMUArgs(t *testing.T) {
	c := &Config{
		Kernel:    Kernel{Vmlinuz: "/c/vmlinuz"},
		Initramfs: "/c/initrd.gz", AgentPath: "/w/bin/vmexec", MemoryMB: 2048, CPUs: 2,
	}
	args := qemuArgs(c, "/tmp/s.sock")
	joined := strings.Join(args, " ")
	for _, want := range []string{
		"-nic none", "-m 2048", "-smp 2", "-kernel /c/vmlinuz", "-initrd /c/initrd.gz",
		"ipvskit_agent=/w/bin/vmexec", "readonly=on", "path=/tmp/s.sock", "name=" + AgentPort,
		"-accel tcg",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("args lack %q:\n%s", want, joined)
		}
	}
	if slices.Contains(args, "-enable-kvm") {
		t.Error("KVM used when not asked for")
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-netdev") || strings.HasPrefix(a, "user,") {
			t.Errorf("a network device slipped in: %q", a)
		}
	}
	c.KVM = true
	if args := qemuArgs(c, "/s"); !slices.Contains(args, "-enable-kvm") || slices.Contains(args, "tcg,thread=multi") {
		t.Errorf("KVM args wrong: %q", args)
	}
}
