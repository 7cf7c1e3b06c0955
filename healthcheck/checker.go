package healthcheck

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ipvskit/ipvskit/internal/nsfd"
	"github.com/vishvananda/netns"
)

// DefaultWorkers is the size of the worker pool when Config.Workers is 0.
const DefaultWorkers = 64

// Config configures a Checker. A nil *Config means the zero Config.
type Config[K comparable] struct {
	// NetNS is the network namespace the probes' sockets are opened in,
	// chosen once by New: 0 means the caller's (those of the goroutines
	// that run the checks); a positive value is a file descriptor of the
	// namespace, which New duplicates (the caller may close theirs); a
	// negative value is refused. Not 0 only on Linux.
	NetNS netns.NsHandle
	// Workers is how many checks run at once; 0 means DefaultWorkers.
	// A check that times out holds a worker for its Timeout, so a pool
	// must cover (checks per second) x (seconds per check).
	Workers int
	// Notify receives every change of a target's state, called from a
	// worker goroutine: serially for one target, concurrently for
	// different ones; the target's next check waits for it. It must not
	// block for long (hand the event to a channel or a queue), as it holds
	// a worker, and must not call Set, Replace, Remove or Close,
	// which may wait for it (State and Len are fine). Nil means no events
	// (State still answers).
	Notify func(Event[K])
	// Observe, if not nil, receives every check's result, whether or not
	// it changed the target's state (for a latency histogram, a log of
	// every failure): called from a worker goroutine, like Notify, before
	// Notify's event for the same check, under the same rules (quick, no
	// Set, Replace, Remove or Close).
	Observe func(Result[K])
	// Logger, if not nil, receives state changes (Info) and failed checks
	// (Debug). Nil logs nothing.
	Logger *slog.Logger
}

// Checker runs the checks of a set of targets, each named by a key of type
// K. Its methods are safe for concurrent use.
type Checker[K comparable] struct {
	core    checkerCore
	notify  func(Event[K])
	observe func(Result[K])
	log     *slog.Logger
	ctx     context.Context // ends with Close; every check's parent
	cancel  context.CancelFunc
	workers sync.WaitGroup

	sched  scheduler[K]
	checks atomic.Uint64 // checks run, for the benchmark
	late   atomic.Int64  // the sum of their delays past due, in ns, for the benchmark
}

// New validates cfg and starts a Checker with no targets: its scheduler,
// its workers and, for a Config.NetNS other than 0, the thread that opens
// sockets in that namespace. An invalid cfg is a *ValidationError; NetNS
// other than 0 is an error wrapping inet.ErrNotSupported off Linux.
func New[K comparable](cfg *Config[K]) (*Checker[K], error) {
	var conf Config[K]
	if cfg != nil {
		conf = *cfg
	}
	r := refusals{prefix: "Config."}
	if v, reason, ok := nsfd.Check(int(conf.NetNS)); !ok {
		r.add("NetNS", v, reason)
	}
	if conf.Workers < 0 {
		r.add("Workers", strconv.Itoa(conf.Workers), "want 0 (= "+strconv.Itoa(DefaultWorkers)+") or more")
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	if conf.Workers == 0 {
		conf.Workers = DefaultWorkers
	}
	c := &Checker[K]{notify: conf.Notify, observe: conf.Observe, log: conf.Logger}
	c.core.dialer.KeepAlive = -1 // a probe's connection lives for one check
	if conf.NetNS != 0 {
		ns, err := openNS(int(conf.NetNS))
		if err != nil {
			return nil, err
		}
		c.core.ns = ns
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.sched.init(conf.Workers)
	c.workers.Add(conf.Workers + 1)
	go func() { defer c.workers.Done(); c.sched.run(c.ctx) }()
	for range conf.Workers {
		go func() { defer c.workers.Done(); c.work() }()
	}
	return c, nil
}

// Close stops every check, waits for the workers to end, and releases the
// namespace. No event is delivered once Close returns. It must not be
// called from Notify.
func (c *Checker[K]) Close() error {
	if !c.sched.close() {
		return nil
	}
	c.cancel()
	c.workers.Wait()
	if c.core.ns != nil {
		c.core.ns.close()
	}
	return nil
}

// Validate checks c as Set, Replace and New's callers would have it
// checked, without a Checker: a *ValidationError naming each refused field
// (`Check.Interval`), or nil. A program that loads its checks from a file
// validates them with the rest of the file before it starts anything.
func (c Check) Validate() error {
	r := refusals{prefix: "Check."}
	prepare(c, &r)
	return r.err()
}

// Set adds the target key, or changes it. A new target starts Unknown and
// is first checked after a random delay up to its Check.Jitter. For an
// existing key, a new address or check type starts it over (Unknown, no
// event, the same first delay); any other change keeps its state, counts
// and schedule, and applies from its next check. An invalid t is a
// *ValidationError and changes nothing.
func (c *Checker[K]) Set(key K, t Target) error {
	r := refusals{prefix: "Target.Check."}
	p := prepare(t.Check, &r)
	if err := r.err(); err != nil {
		return err
	}
	return c.sched.set(key, t.Addr, p)
}

// Replace makes the Checker's targets exactly targets: keys not in it are
// removed, the others Set. All targets are validated first: if any is
// invalid, the *ValidationError names each refused field
// (`targets[KEY].Check.Interval`) and nothing changes.
func (c *Checker[K]) Replace(targets map[K]Target) error {
	probes := make(map[K]*probe, len(targets))
	r := refusals{}
	for k, t := range targets {
		r.prefix = fmt.Sprintf("targets[%v].Check.", k)
		probes[k] = prepare(t.Check, &r)
	}
	if err := r.err(); err != nil {
		return err
	}
	return c.sched.replace(targets, probes)
}

// Remove removes the target key, if there is one. Once Remove returns, the
// target gets no more events; a check of it still running is ignored. It
// must not be called from Notify.
func (c *Checker[K]) Remove(key K) { c.sched.remove(key) }

// State returns the target's state, and false if there is no such target.
func (c *Checker[K]) State(key K) (State, bool) { return c.sched.state(key) }

// Len returns the number of targets.
func (c *Checker[K]) Len() int { return c.sched.len() }

// DialContext opens a connection ("tcp" or "udp") to addr from the
// Checker's network namespace, for Func checks that need one.
func (c *Checker[K]) DialContext(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error) {
	if network != "tcp" && network != "udp" {
		return nil, fmt.Errorf("healthcheck: dial %s: network %q: want tcp or udp", addr, network)
	}
	return c.core.dial(ctx, network, addr)
}
