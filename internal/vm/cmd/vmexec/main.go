// Command vmexec runs programs inside ipvskit's VM rig: Debian's stock kernel
// under QEMU, with the host's root shared read-only, so that tests needing
// IPVS or dummy links run against a real kernel that has them.
//
//	vmexec [flags] PROGRAM [ARGS...]          run PROGRAM in the guest as root (works as go test -exec)
//	vmexec [flags] session -- CMD [ARGS...]   boot once, run CMD on the host; every vmexec it starts joins this boot
//	vmexec [flags] prepare                    fetch the kernel and build the initramfs into the cache
//	vmexec guest                              the agent, inside the guest (started by the rig's init)
//
// With -without, the guest leaves the named modules out (see
// vm.Config.Without).
//
// PROGRAM's exit code is vmexec's. A failure of the rig itself (the guest did
// not boot, twice, or went away) exits 125 with "vmexec: RIG FAILURE" and the
// console's tail, so it is never mistaken for a test failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ipvskit/ipvskit/internal/vm"
)

const exitRig = 125

func main() {
	fs := flag.NewFlagSet("vmexec", flag.ExitOnError)
	cache := fs.String("cache", defaultCache(), "cache `dir` for the kernel and initramfs (env IPVSKIT_VM_CACHE)")
	bootTimeout := fs.Duration("boot-timeout", 120*time.Second, "how long a boot may take to reach the agent before it is killed and retried once")
	console := fs.String("console", os.Getenv("IPVSKIT_VM_CONSOLE"), "append the guest's serial console to this `file` (env IPVSKIT_VM_CONSOLE)")
	mem := fs.Int("mem", 2048, "guest memory in MiB")
	cpus := fs.Int("cpus", 2, "guest CPUs")
	qemu := fs.String("qemu", "qemu-system-x86_64", "QEMU `program`")
	busybox := fs.String("busybox", "/bin/busybox", "a static busybox for the initramfs")
	without := fs.String("without", "", "comma-separated `modules` the guest leaves out (to test a kernel that lacks them)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: vmexec [flags] PROGRAM [ARGS...] | session -- CMD [ARGS...] | prepare | guest")
		fs.PrintDefaults()
	}
	fs.Parse(os.Args[1:])
	args := fs.Args()
	if len(args) == 0 {
		fs.Usage()
		os.Exit(2)
	}
	if args[0] == "guest" && len(args) == 1 {
		if err := vm.Agent(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		vm.PowerOff()
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &rig{cache: *cache, busybox: *busybox, cfg: vm.Config{
		QEMU: *qemu, MemoryMB: *mem, CPUs: *cpus, KVMAuto: true, BootTimeout: *bootTimeout,
	}, consolePath: *console}
	if *without != "" {
		r.cfg.Without = strings.Split(*without, ",")
	}

	switch {
	case args[0] == "prepare" && len(args) == 1:
		if err := r.prepare(ctx); err != nil {
			fatal(err)
		}
		fmt.Printf("vmexec: kernel %s, initramfs %s\n", r.cfg.Kernel.Vmlinuz, r.cfg.Initramfs)
	case args[0] == "session":
		if len(args) < 3 || args[1] != "--" {
			fatal(errors.New("usage: vmexec session -- CMD [ARGS...]"))
		}
		os.Exit(r.session(ctx, args[2:]))
	default:
		os.Exit(r.exec(ctx, args))
	}
}

type rig struct {
	cache, busybox, consolePath string
	cfg                         vm.Config
}

func (r *rig) prepare(ctx context.Context) error {
	k, err := vm.EnsureKernel(ctx, r.cache, func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) })
	if err != nil {
		return err
	}
	initrd, err := vm.EnsureInitramfs(k, r.cache, r.busybox)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r.cfg.Kernel, r.cfg.Initramfs, r.cfg.AgentPath = k, initrd, self
	return nil
}

func (r *rig) boot(ctx context.Context) (*vm.Session, func(), error) {
	if err := r.prepare(ctx); err != nil {
		return nil, nil, err
	}
	closeConsole := func() {}
	if r.consolePath != "" {
		f, err := os.OpenFile(r.consolePath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, err
		}
		r.cfg.Console, closeConsole = f, func() { f.Close() }
	}
	start := time.Now()
	s, err := vm.Boot(ctx, &r.cfg)
	if err != nil {
		closeConsole()
		return nil, nil, err
	}
	accel := "tcg"
	if s.KVM() {
		accel = "kvm"
	}
	fmt.Fprintf(os.Stderr, "vmexec: guest %s up in %.1fs (%s)\n", s.Uname, time.Since(start).Seconds(), accel)
	return s, func() { s.Close(); closeConsole() }, nil
}

// exec runs one program in the guest: the session's if there is one,
// else a guest of its own.
func (r *rig) exec(ctx context.Context, argv []string) int {
	job, err := jobFor(argv)
	if err != nil {
		fatal(err)
	}
	if sock := os.Getenv(vm.EnvSocket); sock != "" {
		code, err := vm.RunRemote(ctx, sock, job, os.Stdout, os.Stderr)
		return result(code, err)
	}
	s, done, err := r.boot(ctx)
	if err != nil {
		return rigFailure(err)
	}
	defer done()
	code, err := s.Run(ctx, job, os.Stdout, os.Stderr)
	if errors.Is(err, vm.ErrVMGone) {
		err = &vm.RigError{Attempts: 1, Reason: "the guest went away while the job ran", ConsoleTail: s.ConsoleTail()}
	}
	return result(code, err)
}

// session boots one guest, serves it on a socket, and runs cmd on the host
// with the socket in its environment.
func (r *rig) session(ctx context.Context, cmdArgs []string) int {
	s, done, err := r.boot(ctx)
	if err != nil {
		return rigFailure(err)
	}
	defer done()
	dir, err := os.MkdirTemp("", "ipvskit-session-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "session.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fatal(err)
	}
	defer ln.Close()
	go vm.Serve(ln, s)

	cmd := exec.CommandContext(ctx, cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), vm.EnvSocket+"="+sock)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	err = cmd.Run()
	if cmd.ProcessState != nil {
		return cmd.ProcessState.ExitCode()
	}
	fmt.Fprintln(os.Stderr, "vmexec:", err)
	return 1
}

func jobFor(argv []string) (vm.Job, error) {
	wd, err := os.Getwd()
	if err != nil {
		return vm.Job{}, err
	}
	prog := argv[0]
	if !strings.Contains(prog, "/") {
		if prog, err = exec.LookPath(prog); err != nil {
			return vm.Job{}, err
		}
	}
	if prog, err = filepath.Abs(prog); err != nil {
		return vm.Job{}, err
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, vm.EnvSocket+"=") {
			env = append(env, kv)
		}
	}
	return vm.Job{Argv: append([]string{prog}, argv[1:]...), Dir: wd, Env: env}, nil
}

func result(code int, err error) int {
	if err == nil {
		return code
	}
	var re *vm.RigError
	if errors.As(err, &re) || errors.Is(err, vm.ErrVMGone) || strings.Contains(err.Error(), "vm rig failure") {
		return rigFailure(err)
	}
	fmt.Fprintln(os.Stderr, "vmexec:", err)
	if code >= 0 {
		return code
	}
	return 1
}

func rigFailure(err error) int {
	fmt.Fprintf(os.Stderr, "vmexec: RIG FAILURE (not a test failure): %v\n", err)
	return exitRig
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "vmexec:", err)
	os.Exit(exitRig)
}

func defaultCache() string {
	if d := os.Getenv("IPVSKIT_VM_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ipvskit", "vm")
	}
	return filepath.Join(os.TempDir(), "ipvskit-vm-cache")
}
