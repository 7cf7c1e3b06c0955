package vm

import (
	"os"
	"regexp"
	"strconv"
	"strings"
)

// useKVM decides whether to boot with KVM: only when /dev/kvm is writable and
// the CPU advertises hardware virtualisation (vmx or svm). A writable /dev/kvm
// without them means no nested virtualisation, where a KVM boot hangs after
// the BIOS; pure emulation is slow but works.
func useKVM(kvmWritable bool, cpuinfo string) bool {
	return kvmWritable && hasVirtFlag(cpuinfo)
}

var flagsLine = regexp.MustCompile(`(?m)^flags\s*:(.*)$`)

func hasVirtFlag(cpuinfo string) bool {
	for _, m := range flagsLine.FindAllStringSubmatch(cpuinfo, -1) {
		for _, f := range strings.Fields(m[1]) {
			if f == "vmx" || f == "svm" {
				return true
			}
		}
	}
	return false
}

// detectKVM applies useKVM to this machine.
func detectKVM() bool {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && useKVM(true, string(cpuinfo))
}

// qemuArgs is the command line for one boot. The guest gets no network
// (-nic none), the host's root read-only over 9p, the serial console on
// standard output, and the agent's port as a socket QEMU connects to.
func qemuArgs(c *Config, sock string) []string {
	cmdline := "console=ttyS0 quiet loglevel=4 panic=-1 mitigations=off ipvskit_agent=" + c.AgentPath
	if c.withoutArg != "" {
		cmdline += " " + withoutParam + "=" + c.withoutArg
	}
	args := []string{
		"-nodefaults", "-no-user-config", "-nic", "none",
		"-m", strconv.Itoa(c.MemoryMB), "-smp", strconv.Itoa(c.CPUs),
		"-display", "none", "-monitor", "none", "-serial", "stdio", "-no-reboot",
		"-kernel", c.Kernel.Vmlinuz, "-initrd", c.Initramfs,
		"-append", cmdline,
		"-virtfs", "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap",
		"-chardev", "socket,id=agent,path=" + sock,
		"-device", "virtio-serial-pci",
		"-device", "virtserialport,chardev=agent,name=" + AgentPort,
	}
	if c.KVM {
		return append(args, "-enable-kvm", "-cpu", "host")
	}
	return append(args, "-accel", "tcg,thread=multi", "-cpu", "max")
}
