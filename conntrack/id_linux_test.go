package conntrack

import (
	"context"
	"encoding/binary"
	"errors"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

// TestIntegrationDeleteChecksID: a delete request carries the dumped
// entry's id, and the kernel refuses it (ENOENT) for an entry of the same
// tuple with another id, as it would be after the flow was deleted and a
// new one took the tuple between the dump and the delete.
func TestIntegrationDeleteChecksID(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireTool(t, "conntrack")
	ns.Exec(t, "conntrack", "-I", "-p", "udp", "-s", "198.18.20.2", "-d", "198.18.100.1", "--sport", "40000", "--dport", "53",
		"-r", "198.18.11.2", "-q", "198.18.20.2", "--reply-port-src", "5353", "--reply-port-dst", "40000", "-t", "600")
	c, err := New(&Config{NetNS: ns.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn := c.c.conn.(*nlconn.Conn)
	var entries []entry
	err = conn.Dump(context.Background(), dumpRequest(IPv4), func(_ netlink.Header, data []byte) error {
		e, err := decodeEntry(data)
		if err == nil {
			e.orig, e.id = append([]byte(nil), e.orig...), append([]byte(nil), e.id...)
			entries = append(entries, e)
		}
		return err
	})
	if err != nil || len(entries) != 1 || entries[0].id == nil {
		t.Fatalf("dump: %v, %+v", err, entries)
	}
	e := entries[0]
	wrong := e
	wrong.id = append([]byte(nil), e.id...)
	binary.BigEndian.PutUint32(wrong.id[4:], binary.BigEndian.Uint32(e.id[4:])+1)
	errs, err := conn.Batch(context.Background(), []netlink.Message{deleteRequest(&wrong)}, nlconn.BatchOptions{})
	if err != nil || !errors.Is(errs[0], syscall.ENOENT) {
		t.Fatalf("delete with another id: %v %v, want ENOENT", err, errs)
	}
	if out := ns.Exec(t, "conntrack", "-L"); out == "" {
		t.Fatal("the entry went with a wrong id")
	}
	errs, err = conn.Batch(context.Background(), []netlink.Message{deleteRequest(&e)}, nlconn.BatchOptions{})
	if err != nil || errs[0] != nil {
		t.Fatalf("delete with its id: %v %v", err, errs)
	}
	if out := ns.Exec(t, "conntrack", "-L"); out != "" {
		t.Fatalf("entry still there:\n%s", out)
	}
}
