package iptables

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/nftables"
	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The nftables back end owns its table only if the table carries its mark:
// at least one set whose comment is names.Mark(instance). A table of the
// same name without it is another program's (or was made by hand) and is
// never written or deleted. Each read-back takes the ruleset's generation
// first, and the batch that follows is sent with it: if anyone changed the
// ruleset in between, the kernel refuses the batch (ERESTART) and the
// read-back is done again, so the check and the write are one step.

// maxGenRetries bounds the read-back retries when the ruleset keeps
// changing under a full sync or a cleanup.
const maxGenRetries = 3

// tableState is what a read-back found of the table.
type tableState struct {
	exists bool
	gen    uint32
	sets   []*nftables.Set // the table's sets, when it exists
}

// readTable lists the table's family and the table's sets (no elements),
// and returns a *ForeignError if the table exists without the mark.
func readTable(c *nftables.Conn, t *nftables.Table, fam Family, mark string) (tableState, error) {
	gen, err := c.GetGen()
	if err != nil {
		return tableState{}, fmt.Errorf("reading the ruleset generation: %w", err)
	}
	st := tableState{gen: gen.ID}
	tables, err := c.ListTablesOfFamily(t.Family)
	if err != nil {
		return st, fmt.Errorf("listing tables: %w", err)
	}
	if !slices.ContainsFunc(tables, func(x *nftables.Table) bool { return x.Name == t.Name }) {
		return st, nil
	}
	st.exists = true
	if st.sets, err = c.GetSets(t); err != nil {
		return st, fmt.Errorf("listing the sets of table %s: %w", t.Name, err)
	}
	if !slices.ContainsFunc(st.sets, func(s *nftables.Set) bool { return s.Comment == mark }) {
		return st, foreignTable(fam, t.Name, mark, len(st.sets))
	}
	return st, nil
}

func foreignTable(fam Family, table, mark string, sets int) *ForeignError {
	f, _ := nftFamily(fam)
	return &ForeignError{Kind: "table", Name: f + " " + table,
		Reason: fmt.Sprintf("none of its %d sets has the comment %q", sets, mark)}
}

// readOwned is readTable on the back end's socket, bounded by ctx.
func (b *nftBackend) readOwned(ctx context.Context) (tableState, error) {
	var st tableState
	err := b.bounded(ctx, func() error {
		var err error
		st, err = readTable(b.conn, b.table, b.cfg.Family, b.mark)
		return err
	})
	return st, err
}

// ownLedger reads the table back: nil if there is none, a *ForeignError if
// it is not ours, else the members of its VirtualServers and IPVSIPs sets.
func (b *nftBackend) ownLedger(ctx context.Context) (*Ruleset, error) {
	var out *Ruleset
	err := b.bounded(ctx, func() error {
		var err error
		out, err = readLedger(b.conn, b.table, b.cfg.Family, b.mark)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("nftables: reading table %s %s: %w", b.cfg.Family, b.table.Name, err)
	}
	return out, nil
}

// readLedger reads table t's VirtualServers and IPVSIPs sets: nil if there
// is no table, a *ForeignError if it does not carry mark.
func readLedger(conn *nftables.Conn, t *nftables.Table, fam Family, mark string) (*Ruleset, error) {
	st, err := readTable(conn, t, fam, mark)
	if err != nil || !st.exists {
		return nil, err
	}
	r := NewRuleset(fam, Options{})
	for _, s := range []SetName{VirtualServers, IPVSIPs} {
		i := slices.IndexFunc(st.sets, func(x *nftables.Set) bool { return x.Name == s.String() })
		if i < 0 {
			continue // drift, for Check to report; nothing is owned in it
		}
		elems, err := conn.GetSetElements(st.sets[i])
		if err != nil {
			return nil, fmt.Errorf("reading set %s: %w", s, err)
		}
		for _, e := range elems {
			m, ok := nftMemberOf(s, fam, e)
			if !ok {
				return nil, fmt.Errorf("set %s: element %x is not a %s member (the set's type was changed)", s, e.Key, s.Shape())
			}
			r.Add(s, m)
		}
	}
	return r, nil
}

// ownedNFTObjects is the ledger of the nftables back end's table of
// instance in namespace ns (the iptables back end reads it when it takes
// over): nil if there is no table, no nf_tables, or the table is not ours.
func ownedNFTObjects(ctx context.Context, ns netns.NsHandle, fam Family, instance string, kubeProxy bool) (*Ruleset, error) {
	conn, t, err := otherConn(ctx, ns, fam, instance, kubeProxy)
	if err != nil {
		return nil, err
	}
	r, err := readLedger(conn, t, fam, names.Mark(instance))
	var fe *ForeignError
	switch {
	case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPROTONOSUPPORT), errors.As(err, &fe):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return r, nil
}

// otherConn opens a socket in ns, bounded by ctx's deadline, for the
// table of instance.
func otherConn(ctx context.Context, ns netns.NsHandle, fam Family, instance string, kubeProxy bool) (*nftables.Conn, *nftables.Table, error) {
	deadline := func(c *netlink.Conn) error {
		if d, ok := ctx.Deadline(); ok {
			return c.SetDeadline(d)
		}
		return nil
	}
	opts := []nftables.ConnOption{nftables.WithSockOptions(deadline)}
	if ns > 0 {
		opts = append(opts, nftables.WithNetNSFd(int(ns)))
	}
	conn, err := nftables.New(opts...)
	if err != nil {
		return nil, nil, err
	}
	t := &nftables.Table{Name: names.Table(instance, kubeProxy), Family: nftables.TableFamilyIPv4}
	if fam == IPv6 {
		t.Family = nftables.TableFamilyIPv6
	}
	return conn, t, nil
}

// cleanupNFTObjects deletes the nftables back end's table of family fam in
// namespace ns if it carries the instance's mark (used when the iptables
// back end takes over). A table of that name without the mark is not ours
// and is left alone, without an error; a kernel without nf_tables has none.
func cleanupNFTObjects(ctx context.Context, ns netns.NsHandle, fam Family, instance string, kubeProxy bool) error {
	conn, t, err := otherConn(ctx, ns, fam, instance, kubeProxy)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, err := readTable(conn, t, fam, names.Mark(instance))
		var fe *ForeignError
		switch {
		case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPROTONOSUPPORT):
			return nil // no nf_tables, no table
		case errors.As(err, &fe):
			return nil // not ours
		case err != nil:
			return fmt.Errorf("nftables: %w", err)
		case !st.exists:
			return nil
		}
		conn.DelTable(t)
		err = conn.FlushWithGenID(st.gen)
		if errors.Is(err, unix.ERESTART) && attempt < maxGenRetries {
			continue // the ruleset changed since the read: read again
		}
		if err != nil {
			return fmt.Errorf("nftables: deleting table %s %s: %w", fam, t.Name, err)
		}
		return nil
	}
}
