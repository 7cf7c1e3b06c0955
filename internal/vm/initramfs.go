package vm

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// AgentPort is the name of the virtio-serial port the agent talks on.
const AgentPort = "ipvskit.agent"

// initScript is the guest's /init. It loads the modules (listed in load order
// in /modules) but those the kernel command line names in ipvskit_without=
// (comma-separated, as their files are named; see Config.Without), mounts the host's root read-only at /host, gives it fresh
// proc, sys, dev, run and a private TMPDIR, brings up the loopback as any
// machine has it (a test's API server listens on 127.0.0.1), and runs the
// agent inside it. The agent's path comes from the kernel command line
// (ipvskit_agent=). The share is mounted cache=loose: the guest keeps what
// it read of the host's files in its page cache, which makes each exec of a
// tool about three times faster (measured: ipset version 0.23 s -> 0.08 s
// under emulation). The host's files that a session uses do not change under
// it: test binaries are new files, and the guest writes only to its own
// tmpfs.
const initScript = `#!/bin/busybox sh
B=/bin/busybox
$B mkdir -p /proc /sys /dev /host
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys
$B mount -t devtmpfs dev /dev
agent=
without=" "
for w in $($B cat /proc/cmdline); do
	case $w in
	ipvskit_agent=*) agent=${w#ipvskit_agent=} ;;
	ipvskit_without=*) without=" $(echo ${w#ipvskit_without=} | $B tr , ' ') " ;;
	esac
done
for m in $($B cat /modules); do
	n=${m#*-}
	n=${n%%.ko*}
	case $without in *" $n "*) echo "ipvskit-init: leaving out $n"; continue ;; esac
	$B insmod /lib/modules/$m || echo "ipvskit-init: insmod $m failed"
done
if ! $B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose host /host; then
	echo "ipvskit-init: cannot mount the host's root over 9p"; $B poweroff -f
fi
$B mount -t proc proc /host/proc
$B mount -t sysfs sys /host/sys
$B mount -t devtmpfs dev /host/dev
$B mount -t tmpfs -o mode=0755 run /host/run
$B mkdir -p /host/run/ipvskit-tmp
$B ip link set lo up
echo "ipvskit-init: modules loaded, starting $agent"
$B chroot /host "$agent" guest
echo "ipvskit-init: agent exited with $?"
$B poweroff -f
`

// writeInitramfs writes a gzip'd newc cpio archive holding busybox as
// /bin/busybox, the init script, and the modules in load order.
func writeInitramfs(w io.Writer, busybox string, modulesDir string, order []string) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	cw := &cpioWriter{w: zw}
	for _, d := range []string{"bin", "lib", "lib/modules"} {
		cw.dir(d)
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("reading busybox: %w", err)
	}
	cw.file("bin/busybox", 0o755, bb)
	cw.file("init", 0o755, []byte(initScript))
	var list strings.Builder
	for i, p := range order {
		data, err := os.ReadFile(path.Join(modulesDir, p))
		if err != nil {
			return fmt.Errorf("reading module: %w", err)
		}
		name := fmt.Sprintf("%03d-%s", i, path.Base(p))
		cw.file("lib/modules/"+name, 0o644, data)
		fmt.Fprintln(&list, name)
	}
	cw.file("modules", 0o644, []byte(list.String()))
	cw.trailer()
	if cw.err != nil {
		return cw.err
	}
	return zw.Close()
}

// cpioWriter writes the "newc" cpio format the kernel unpacks into its
// initramfs, carrying the first error to the end.
type cpioWriter struct {
	w   io.Writer
	ino int
	err error
}

func (c *cpioWriter) dir(name string)                      { c.entry(name, 0o040755, nil) }
func (c *cpioWriter) file(name string, perm int, b []byte) { c.entry(name, 0o100000|perm, b) }
func (c *cpioWriter) trailer()                             { c.entry("TRAILER!!!", 0, nil) }

func (c *cpioWriter) entry(name string, mode int, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&0o040000 != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad(len(hdr) + len(name) + 1)
	c.write(data)
	c.pad(len(data))
}

func (c *cpioWriter) pad(n int) {
	if r := n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) write(b []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
}
