package ipvsbench

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TraceSends must see exactly what a known netlink call sends: the standard
// library's NetlinkRIB sends one RTM_GETLINK dump request, not acked.
func TestTraceSendsCountsOneDump(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to ptrace")
	}
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("needs strace")
	}
	got, err := TraceSends(func() error {
		_, err := syscall.NetlinkRIB(syscall.RTM_GETLINK, syscall.AF_UNSPEC)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Sent{Syscalls: 1, Requests: 1, Dumps: 1, Acked: 0}
	if got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestParseStraceBatch(t *testing.T) {
	// Two messages in one sendmsg: a plain request and one with
	// NLM_F_ACK; then a reply-shaped message without NLM_F_REQUEST.
	out := "123 sendmsg(3, {...}, 0) = 40\n" +
		" * 40 bytes in buffer 0\n" +
		" | 00000  14 00 00 00 24 00 01 00  01 00 00 00 00 00 00 00  ....$........... |\n" +
		" | 00010  01 02 00 00 14 00 00 00  24 00 05 00 02 00 00 00  ........$....... |\n" +
		" | 00020  00 00 00 00 01 02 00 00                           ........         |\n" +
		"123 sendto(3, [...], 20, 0, NULL, 0) = 20\n" +
		" | 00000  14 00 00 00 24 00 00 00  01 00 00 00 00 00 00 00  ....$........... |\n" +
		" | 00010  01 02 00 00                                       ....             |\n"
	got, err := parseStrace([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := Sent{Syscalls: 2, Requests: 2, Dumps: 0, Acked: 1}
	if got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}
