package nsfd

import (
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"golang.org/x/sys/unix"
)

// inode returns the namespace inode of descriptor fd.
func inode(t *testing.T, fd int) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// threadInode returns the namespace inode of the thread running it.
func threadInode() (uint64, error) {
	var st unix.Stat_t
	err := unix.Stat("/proc/thread-self/ns/net", &st)
	return st.Ino, err
}

func TestOpenZeroIsTheCallingThreads(t *testing.T) {
	ns := testutil.NewNetNS(t)
	var fd int
	var want uint64
	var err error
	ns.Do(t, func() {
		fd, err = Open(0)
		if err == nil {
			want, err = threadInode()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if got := inode(t, fd); got != want {
		t.Errorf("Open(0) on a thread in the test namespace: inode %d, want %d", got, want)
	}
}

func TestOpenDuplicatesAndDoEnters(t *testing.T) {
	ns := testutil.NewNetNS(t)
	mine, err := unix.Dup(int(ns.Handle()))
	if err != nil {
		t.Fatal(err)
	}
	want := inode(t, mine)
	fd, err := Open(mine)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	unix.Close(mine) // the caller's copy goes; ours must still work
	if fd == mine {
		t.Fatalf("Open returned the caller's descriptor %d", mine)
	}
	var got uint64
	if err := Do(fd, func() (err error) { got, err = threadInode(); return err }); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Do ran in namespace inode %d, want %d", got, want)
	}
	if here, _ := threadInode(); here == want {
		t.Errorf("the test's own thread is in the test namespace after Do")
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#x, %v; want close-on-exec", flags, err)
	}
}

func TestOpenRefusesNegative(t *testing.T) {
	if fd, err := Open(-1); err == nil {
		unix.Close(fd)
		t.Fatal("Open(-1) succeeded")
	}
}

func TestDoReturnsFsError(t *testing.T) {
	fd, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	want := unix.ENOENT
	if err := Do(fd, func() error { return want }); err != want {
		t.Errorf("Do = %v, want f's error %v", err, want)
	}
}
