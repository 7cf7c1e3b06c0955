// Package vm is ipvskit's test rig: it boots Debian's stock kernel under QEMU,
// with the host's root file system shared read-only over 9p, and runs programs
// (test binaries, benchmarks, the demo) inside it as root.
//
// The build machine's own kernel has no IPVS and no dummy links; Debian's has
// both as modules. The rig fetches the kernel package that linux-image-amd64
// depends on, extracts and depmods it, and builds an initramfs of busybox plus
// the modules a service proxy uses (IPVS with every scheduler, dummy, veth,
// bridge, the ipset types, nf_tables, xtables, conntrack, tunnels). Both are
// cached, so later boots start at once.
//
// The guest's init loads the modules (but those Config.Without leaves out,
// named on the kernel command line, for testing a kernel that lacks them:
// the guest cannot load modules on demand, so a module not loaded is a
// module the kernel does not have), mounts the host's root at /host and
// chroots into it, where it starts the agent: the same vmexec binary in guest
// mode. Host and agent talk over one virtio-serial port with small frames
// (proto.go): the host starts jobs, the agent streams each job's standard
// output and error back and reports its exit code. Many jobs can run at once
// in one boot, which is how a whole `go test ./...` shares one VM (server.go).
//
// QEMU always runs with -nic none: the guest has no network to the outside.
// KVM is used only when /dev/kvm is writable and the CPU advertises vmx or svm
// (without nested virtualisation a KVM boot hangs); otherwise pure emulation.
// A boot that does not reach the agent in time is killed and retried once,
// then reported as a *RigError carrying the console's tail.
package vm
