package iptables

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/nftables"
	"github.com/ipvskit/ipvskit/internal/kerr"
	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/internal/nsfd"
	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// nftBackend is the Linux implementation of NFTablesBackend.
type nftBackend struct {
	cfg   NFTablesConfig
	conn  *nftables.Conn
	nl    *netlink.Conn // the lasting socket under conn, for deadlines and buffers
	table *nftables.Table
	mark  string // the comment of every set the back end makes
	sets  map[SetName]*nftables.Set

	syncEngine

	// probes are the kernel features a failed full sync is diagnosed
	// with (nftProbes; tests add their own).
	probes []nftProbe
	// answers keeps each probe's answer: Probe and the diagnosis of a
	// failed sync ask the kernel once per feature.
	answers kerr.Probes

	// beforeFlush, when set (by tests), is called with each batch before
	// it is sent; an error it queues makes the kernel refuse the batch.
	beforeFlush func(c *nftables.Conn, batch int)
	// editChains, when set (by tests), changes the table's chains before
	// they are sent (and before blameRule sends them again).
	editChains func([]nftChain)
}

func newNFTBackend(cfg *NFTablesConfig) (*nftBackend, error) {
	fd, err := nsfd.Open(int(cfg.NetNS))
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	b := &nftBackend{cfg: *cfg, mark: names.Mark(cfg.Instance), probes: nftProbes()}
	// From here on, b.cfg.NetNS is the back end's own descriptor: the
	// caller may close theirs, and close closes this one.
	b.cfg.NetNS = netns.NsHandle(fd)
	cfg = &b.cfg
	capture := func(c *netlink.Conn) error {
		b.nl = c
		// Buffers are sized here because a socket option turns off the
		// library's own sizing; batches resize the send buffer.
		if err := c.SetReadBuffer(8 << 20); err != nil {
			return err
		}
		return c.SetWriteBuffer(4 << 20)
	}
	opts := []nftables.ConnOption{nftables.AsLasting(), nftables.WithSockOptions(capture), nftables.WithNetNSFd(fd)}
	conn, err := nftables.New(opts...)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nftables: opening netlink socket: %w", err)
	}
	b.conn = conn
	fam := nftables.TableFamilyIPv4
	if cfg.Family == IPv6 {
		fam = nftables.TableFamilyIPv6
	}
	b.table = &nftables.Table{Name: names.Table(cfg.Instance, cfg.KubeProxyNames), Family: fam}
	if _, err := conn.ListTablesOfFamily(fam); err != nil {
		conn.CloseLasting()
		unix.Close(fd)
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("nftables: the kernel has no nf_tables (module nf_tables): %w: %w", ErrNotSupported, err)
		}
		return nil, fmt.Errorf("nftables: listing tables: %w", err)
	}
	b.cleanupOther = func(ctx context.Context) error {
		return cleanupIPTablesObjects(ctx, cfg.NetNS, cfg.Family, cfg.Instance, cfg.KubeProxyNames)
	}
	b.ownedOther = func(ctx context.Context) (*Ruleset, error) {
		return ownedIPTablesObjects(ctx, cfg.NetNS, cfg.Family, cfg.Instance, cfg.KubeProxyNames)
	}
	return b, nil
}

func (b *nftBackend) close() error {
	err := b.conn.CloseLasting()
	if b.cfg.NetNS >= 0 {
		unix.Close(int(b.cfg.NetNS))
		b.cfg.NetNS = -1
	}
	b.answers.Forget() // a closed back end's Probe fails, as its other calls do
	return err
}

func (b *nftBackend) kind() string          { return "nftables" }
func (b *nftBackend) family() Family        { return b.cfg.Family }
func (b *nftBackend) limits(*Ruleset) error { return nil }

// flush sends the queued batch, bounded by ctx, with a send buffer of at
// least size bytes; a non-zero gen makes the kernel refuse the batch
// (ERESTART) if the ruleset changed since that generation.
func (b *nftBackend) flush(ctx context.Context, size int, batch int, gen uint32) error {
	if b.beforeFlush != nil {
		b.beforeFlush(b.conn, batch)
	}
	if size > 4<<20 {
		if err := b.nl.SetWriteBuffer(size); err != nil {
			return err
		}
	}
	return b.bounded(ctx, func() error { return b.conn.FlushWithGenID(gen) })
}

// bounded runs f, which talks to the kernel over the lasting socket, with
// ctx's deadline and cancellation on the socket.
func (b *nftBackend) bounded(ctx context.Context, f func() error) error {
	if d, ok := ctx.Deadline(); ok {
		b.nl.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { b.nl.SetDeadline(time.Unix(1, 0)) })
	err := f()
	if !stop() {
		// ctx ended during the call; its error is the cause.
		err = errors.Join(ctx.Err(), err)
	}
	b.nl.SetDeadline(time.Time{})
	return err
}

// writeFull re-creates the table, after checking that it is ours (or
// absent) in the same generation. Repair does the same.
func (b *nftBackend) writeFull(ctx context.Context, r *Ruleset, _ bool) error {
	for attempt := 0; ; attempt++ {
		st, err := b.readOwned(ctx)
		if err != nil {
			return fmt.Errorf("nftables: full sync of table %s %s: %w", b.cfg.Family, b.table.Name, err)
		}
		err = b.recreate(ctx, r, st.gen)
		if errors.Is(err, unix.ERESTART) && attempt < maxGenRetries {
			continue // the ruleset changed since the read: read again
		}
		if missingFeature(err) {
			if rerr := b.blameRule(ctx, r); rerr != nil {
				return rerr
			}
			return b.diagnose(ctx, err)
		}
		return err
	}
}

// recreate sends the batch that re-creates the table, with generation gen.
func (b *nftBackend) recreate(ctx context.Context, r *Ruleset, gen uint32) error {
	c, t := b.conn, b.table
	// Add then delete: deletes any old table (whatever its sets' types or
	// chains' priorities) without failing when there is none.
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	sets := make(map[SetName]*nftables.Set, numSets)
	ids := make(setRefs, numSets)
	size := 1 << 20
	var elems, ruleMsgs int
	for _, s := range Sets() {
		spec := nftSetSpec(t, b.cfg.Family, s, b.mark)
		ms := nftMembers(r, s)
		size += len(ms) * 96
		elems += len(ms)
		if err := c.AddSet(spec, nftElems(s, ms)); err != nil {
			b.flushDiscard()
			return fmt.Errorf("nftables: full sync of table %s: set %s: %w", t.Name, s, err)
		}
		sets[s], ids[s] = spec, spec.ID
	}
	// All chains first: a rule may jump to a chain defined after its own.
	chains := b.chains(r, ids)
	made := make([]*nftables.Chain, len(chains))
	for i, ch := range chains {
		chain := &nftables.Chain{Name: ch.name, Table: t}
		if ch.base != nil {
			chain.Type = nftables.ChainType(ch.base.typ)
			chain.Hooknum = nftHook(ch.base.hook)
			chain.Priority = nftables.ChainPriorityRef(nftables.ChainPriority(ch.base.prio))
			accept := nftables.ChainPolicyAccept
			chain.Policy = &accept
		}
		made[i] = c.AddChain(chain)
		ruleMsgs++
	}
	for i, ch := range chains {
		for _, rl := range ch.rules {
			c.AddRule(&nftables.Rule{Table: t, Chain: made[i], Exprs: exprs(rl.exprs)})
			size += 1024
			ruleMsgs++
		}
	}
	// One batch: sets and rules cannot be timed apart (see ApplyStats).
	start := time.Now()
	err := b.flush(ctx, size, 0, gen)
	b.stats.RulesTime += time.Since(start)
	b.stats.SetsReplaced, b.stats.ElementsAdded, b.stats.RuleWrites = numSets, elems, ruleMsgs
	if err != nil {
		return fmt.Errorf("nftables: full sync of table %s %s: %w", b.cfg.Family, t.Name, err)
	}
	b.sets = sets
	return nil
}

// flushDiscard drops a half-queued batch (the library keeps its first
// error and discards the queue on the next Flush).
func (b *nftBackend) flushDiscard() { _ = b.conn.Flush() }

func nftHook(h string) *nftables.ChainHook {
	switch h {
	case "prerouting":
		return nftables.ChainHookPrerouting
	case "input":
		return nftables.ChainHookInput
	case "forward":
		return nftables.ChainHookForward
	case "output":
		return nftables.ChainHookOutput
	}
	return nftables.ChainHookPostrouting
}

// elemOp is a batch of element deletes or adds for one set.
type elemOp struct {
	set   SetName
	del   bool
	elems []Member
}

// writeDeltas sends d in batches of at most MaxBatchElements elements,
// deletions first, each batch atomic.
func (b *nftBackend) writeDeltas(ctx context.Context, old, r *Ruleset, d *setDeltas) error {
	var dels, adds []elemOp
	for _, s := range Sets() {
		add, del := d[s].Add, d[s].Del
		if len(add)+len(del) == 0 {
			continue
		}
		if s == LoadBalancerSourceCIDR {
			// Stored normalised: diff the normalised lists.
			add, del = diffMembers(nftMembers(r, s), nftMembers(old, s))
		}
		if len(del) > 0 {
			dels = append(dels, elemOp{s, true, del})
		}
		if len(add) > 0 {
			adds = append(adds, elemOp{s, false, add})
		}
	}
	ops := append(dels, adds...)
	if len(ops) == 0 {
		return nil
	}
	// Cut into batches of at most MaxBatchElements elements, deletes first.
	max := b.cfg.MaxBatchElements
	var batches [][]elemOp
	var cur []elemOp
	n := 0
	for _, op := range ops {
		for len(op.elems) > 0 {
			k := min(len(op.elems), max-n)
			cur = append(cur, elemOp{op.set, op.del, op.elems[:k]})
			op.elems = op.elems[k:]
			if n += k; n == max {
				batches, cur, n = append(batches, cur), nil, 0
			}
		}
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	for i, batch := range batches {
		size := 1 << 20
		for _, op := range batch {
			spec := b.sets[op.set]
			var err error
			if op.del {
				err = b.conn.SetDeleteElements(spec, nftElems(op.set, op.elems))
			} else {
				err = b.conn.SetAddElements(spec, nftElems(op.set, op.elems))
			}
			if err != nil {
				b.flushDiscard()
				return fmt.Errorf("nftables: set %s: %w", op.set, err)
			}
			size += len(op.elems) * 96
			if op.del {
				b.stats.ElementsDeleted += len(op.elems)
			} else {
				b.stats.ElementsAdded += len(op.elems)
			}
		}
		start := time.Now()
		err := b.flush(ctx, size, i, 0)
		b.stats.SetsTime += time.Since(start)
		if err != nil {
			return fmt.Errorf("nftables: incremental sync of table %s %s (batch %d of %d): %w", b.cfg.Family, b.table.Name, i+1, len(batches), err)
		}
	}
	return nil
}

// removeOwn deletes the table if it is ours, in the generation it was read
// in; a foreign one is left, with a *ForeignError.
func (b *nftBackend) removeOwn(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		st, err := b.readOwned(ctx)
		if err != nil {
			return fmt.Errorf("nftables: deleting table %s %s: %w", b.cfg.Family, b.table.Name, err)
		}
		if !st.exists {
			return nil
		}
		b.conn.DelTable(b.table)
		err = b.flush(ctx, 0, 0, st.gen)
		if errors.Is(err, unix.ERESTART) && attempt < maxGenRetries {
			continue
		}
		if err != nil {
			return fmt.Errorf("nftables: deleting table %s %s: %w", b.cfg.Family, b.table.Name, err)
		}
		return nil
	}
}
