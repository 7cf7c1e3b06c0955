package ipset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/ipvskit/ipvskit/internal/nlconn"
)

// client holds the state behind a Client: the socket, the negotiated
// protocol and the type revisions learnt so far.
type client struct {
	t     nlconn.Transport
	proto uint8

	mu   sync.Mutex
	revs map[revKey]uint8

	// replaceMu serialises Replace calls, which share temporary set names.
	replaceMu sync.Mutex
	// step, when set by this package's tests, is called between the
	// steps of Replace. It is never set outside tests.
	step func(step string)
}

type revKey struct {
	t Type
	f Family
}

// initClient negotiates the protocol over t.
func initClient(ctx context.Context, t nlconn.Transport) (*client, error) {
	msgs, err := t.Execute(ctx, protocolRequest())
	if err != nil {
		var ne *nlconn.Error
		if errors.As(err, &ne) {
			switch ne.Errno {
			case syscall.EINVAL, syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT, syscall.ENOENT:
				// nfnetlink has no ipset subsystem to hand the request to.
				return nil, fmt.Errorf("ipset: the kernel does not answer the ipset protocol (module ip_set): %w: %w", ErrNotSupported, err)
			}
		}
		return nil, wrapErr("protocol", "", TypeUnknown, err)
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("ipset: protocol: %d replies, want 1", len(msgs))
	}
	r, err := decodeProtocol(msgs[0].Data)
	if err != nil {
		return nil, err
	}
	proto := min(r.max, protocolMax)
	if proto < protocolMin || proto < r.min {
		return nil, fmt.Errorf("ipset: the kernel speaks protocol %d-%d, this package %d-%d: %w",
			r.min, r.max, protocolMin, protocolMax, ErrNotSupported)
	}
	return &client{t: t, proto: proto, revs: map[revKey]uint8{}}, nil
}

func (c *client) close() error { return c.t.Close() }

// wrapErr turns a transport error into an *Error.
func wrapErr(op, set string, t Type, err error) error {
	var ne *nlconn.Error
	if errors.As(err, &ne) {
		return newError(op, set, t, int(ne.Errno), ne.Message)
	}
	return &Error{Op: op, Set: set, Err: err}
}

// revision returns the newest revision the kernel has of t in family f.
func (c *client) revision(ctx context.Context, t Type, f Family) (uint8, error) {
	k := revKey{t, f}
	c.mu.Lock()
	r, ok := c.revs[k]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	msgs, err := c.t.Execute(ctx, typeRequest(c.proto, t, f))
	if err != nil {
		return 0, wrapErr("type", "", t, err)
	}
	if len(msgs) != 1 {
		return 0, fmt.Errorf("ipset: type %s: %d replies, want 1", t, len(msgs))
	}
	tr, err := decodeType(msgs[0].Data)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.revs[k] = tr.max
	c.mu.Unlock()
	return tr.max, nil
}

func (c *client) create(ctx context.Context, s *Set, exist bool) error {
	if err := s.Validate(); err != nil {
		return err
	}
	rev, err := c.revision(ctx, s.Type, s.family())
	if err != nil {
		return err
	}
	if _, err := c.t.Execute(ctx, createRequest(c.proto, s, rev, exist)); err != nil {
		return wrapErr("create", s.Name, s.Type, err)
	}
	return nil
}

func (c *client) simple(ctx context.Context, op string, cmd uint8, name string) error {
	if err := validateName("name", name); err != nil {
		return err
	}
	if _, err := c.t.Execute(ctx, nameRequest(c.proto, cmd, name)); err != nil {
		return wrapErr(op, name, TypeUnknown, err)
	}
	return nil
}

func (c *client) twoNames(ctx context.Context, op string, cmd uint8, a, b string) error {
	if err := validateName("from", a); err != nil {
		return err
	}
	if err := validateName("to", b); err != nil {
		return err
	}
	if _, err := c.t.Execute(ctx, twoNameRequest(c.proto, cmd, a, b)); err != nil {
		return wrapErr(op, a, TypeUnknown, err)
	}
	return nil
}

func (c *client) list(ctx context.Context, name string, headersOnly bool) ([]SetInfo, error) {
	msgs, err := c.t.Execute(ctx, listRequest(c.proto, name, headersOnly))
	if err != nil {
		return nil, wrapErr("list", name, TypeUnknown, err)
	}
	sets, err := mergeList(msgs)
	if err != nil {
		return nil, err
	}
	if !headersOnly {
		for i := range sets {
			if sets[i].Entries == nil {
				sets[i].Entries = []Entry{}
			}
		}
	}
	return sets, nil
}

func (c *client) one(ctx context.Context, name string, headersOnly bool) (SetInfo, error) {
	if err := validateName("name", name); err != nil {
		return SetInfo{}, err
	}
	sets, err := c.list(ctx, name, headersOnly)
	if err != nil {
		return SetInfo{}, err
	}
	if len(sets) != 1 || sets[0].Name != name {
		return SetInfo{}, fmt.Errorf("ipset: list %s: the kernel answered with %d sets", name, len(sets))
	}
	return sets[0], nil
}

func (c *client) header(ctx context.Context, name string) (SetInfo, error) {
	return c.one(ctx, name, true)
}

func (c *client) listOne(ctx context.Context, name string) (SetInfo, error) {
	return c.one(ctx, name, false)
}

// modelled returns the header's Set, or an error if this package cannot
// handle its type.
func modelled(h *SetInfo) error {
	if !h.Type.valid() {
		return &Error{Op: "header", Set: h.Name, Err: fmt.Errorf("set type not supported by this package: %w", ErrNotSupported)}
	}
	return nil
}

func (c *client) test(ctx context.Context, name string, e *Entry) (bool, error) {
	h, err := c.header(ctx, name)
	if err != nil {
		return false, err
	}
	if err := modelled(&h); err != nil {
		return false, err
	}
	// Extensions are irrelevant to a test.
	k := e.Key()
	if err := k.validate(&h.Set, "entry"); err != nil {
		return false, err
	}
	_, err = c.t.Execute(ctx, elemRequest(c.proto, cmdTest, name, &k, false))
	if err == nil {
		return true, nil
	}
	werr := wrapErr("test", name, h.Type, err)
	if errors.Is(werr, ErrElementExists) { // IPSET_ERR_EXIST: not in the set
		return false, nil
	}
	return false, werr
}

func (c *client) adt(ctx context.Context, cmd uint8, name string, entries []Entry, strict bool) error {
	h, err := c.header(ctx, name)
	if err != nil {
		return err
	}
	if err := modelled(&h); err != nil {
		return err
	}
	for i := range entries {
		if err := entries[i].validate(&h.Set, fmt.Sprintf("entries[%d]", i)); err != nil {
			return err
		}
	}
	return c.send(ctx, cmd, &h.Set, entries, strict)
}
