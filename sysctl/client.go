package sysctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/ipvskit/ipvskit/internal/nsfd"
	"github.com/vishvananda/netns"
)

// Config configures a Client. A nil *Config means the zero Config.
type Config struct {
	// NetNS is the network namespace whose keys the Client reads and
	// writes, chosen once by New: 0 means the namespace of the thread that
	// calls New; a positive value is a file descriptor of the namespace,
	// which New duplicates (the caller may close theirs as soon as New
	// returns); a negative value, netns.None() included, makes New fail
	// with a *ValidationError.
	NetNS netns.NsHandle
}

// Client reads and writes the net/ sysctls of one network namespace, through
// /proc/sys, each call on a thread of its own (the package documentation
// says why). A Client is safe for concurrent use.
//
// Every method that reads or writes takes a context. It is checked before
// the thread starts and before each write of Apply (a canceled Apply writes
// back what it changed); writes to /proc/sys complete synchronously, so
// nothing waits on the context in between.
type Client struct {
	s       store
	release func() (string, error) // uname -r; a seam for tests
}

// store is the kernel side: do runs f on a thread inside the namespace.
type store interface {
	do(ctx context.Context, f func(rw keyRW) error) error
	close() error
}

// keyRW reads and writes keys (paths below /proc/sys) from inside the
// namespace. A missing key is an error matching fs.ErrNotExist.
type keyRW interface {
	get(key string) (string, error)
	set(key, value string) error
}

// New returns a Client for cfg.NetNS. The error wraps ErrNotSupported on
// systems other than Linux; an invalid cfg.NetNS is a *ValidationError.
func New(cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if v, reason, ok := nsfd.Check(int(cfg.NetNS)); !ok {
		return nil, &ValidationError{Field: "Config.NetNS", Value: v, Reason: reason}
	}
	s, err := newStore(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{s: s, release: uname}, nil
}

// Close releases the Client's handle on the namespace. Calls after Close
// fail with an error wrapping fs.ErrClosed.
func (c *Client) Close() error { return c.s.close() }

// Get returns the value of key (see NormalizeKey for its forms), without the
// trailing newline. A missing key is a *NotExistError naming the module or
// interface it needs.
func (c *Client) Get(ctx context.Context, key string) (string, error) {
	k, err := NormalizeKey(key)
	if err != nil {
		return "", err
	}
	var v string
	err = c.s.do(ctx, func(rw keyRW) error {
		v, err = read(rw, k)
		return err
	})
	return v, opErr(ctx, "get", k, "", err)
}

// Set writes value to key. A value the kernel refuses is an *Error matching
// the errno (EINVAL, ERANGE); a missing key is a *NotExistError.
func (c *Client) Set(ctx context.Context, key, value string) error {
	k, err := NormalizeKey(key)
	if err != nil {
		return err
	}
	if err := validateValue("value", value); err != nil {
		return err
	}
	err = c.s.do(ctx, func(rw keyRW) error { return write(rw, k, value) })
	return opErr(ctx, "set", k, value, err)
}

// Apply makes every setting of p, writing only keys whose value differs,
// and returns each change (key, old value, new value) in p's order.
//
// Nothing is written unless every key is valid and exists: the first
// *ValidationError, or every *NotExistError joined, is returned before any
// write. If the kernel refuses a write (or ctx ends) half way, Apply writes
// the old values of the keys it already changed back, and returns the error
// (joined with any failure to restore) and no changes.
func (c *Client) Apply(ctx context.Context, p Profile) ([]Change, error) {
	want, err := normalizeProfile(p)
	if err != nil {
		return nil, err
	}
	var changes []Change
	err = c.s.do(ctx, func(rw keyRW) error {
		drift, err := diff(rw, want)
		if err != nil {
			return err
		}
		for i, ch := range drift {
			err := ctx.Err()
			if err == nil {
				err = write(rw, ch.Key, ch.New)
			}
			if err != nil {
				err = opErr(ctx, "set", ch.Key, ch.New, err)
				return errors.Join(err, rollback(rw, drift[:i]))
			}
		}
		changes = drift
		return nil
	})
	return changes, err
}

// Check compares the namespace with p without changing anything and returns
// the keys that differ, with the value found as Old and the wanted one as
// New. Missing keys are reported as joined *NotExistError values.
func (c *Client) Check(ctx context.Context, p Profile) ([]Change, error) {
	want, err := normalizeProfile(p)
	if err != nil {
		return nil, err
	}
	var drift []Change
	err = c.s.do(ctx, func(rw keyRW) error {
		var err error
		drift, err = diff(rw, want)
		return err
	})
	return drift, err
}

// KernelVersion returns the version of the running kernel (uname -r).
func (c *Client) KernelVersion() (KernelVersion, error) {
	r, err := c.release()
	if err != nil {
		return KernelVersion{}, fmt.Errorf("sysctl: reading the kernel release: %w", err)
	}
	return ParseKernelRelease(r)
}

// IPVSProfile returns IPVSProfile for the running kernel.
func (c *Client) IPVSProfile(o *IPVSOptions) (Profile, error) {
	v, err := c.KernelVersion()
	if err != nil {
		return nil, err
	}
	return IPVSProfile(v, o)
}

// normalizeProfile validates p and returns its settings with normalized
// keys, without repeats. The same key with two values is an error.
func normalizeProfile(p Profile) ([]Setting, error) {
	out := make([]Setting, 0, len(p))
	seen := map[string]int{}
	for i, s := range p {
		field := "profile[" + strconv.Itoa(i) + "]"
		k, err := NormalizeKey(s.Key)
		if err != nil {
			err.(*ValidationError).Field = field + ".Key"
			return nil, err
		}
		if err := validateValue(field+".Value", s.Value); err != nil {
			return nil, err
		}
		if j, ok := seen[k]; ok {
			if normalizeValue(out[j].Value) != normalizeValue(s.Value) {
				return nil, &ValidationError{Field: field + ".Value", Value: s.Value,
					Reason: "key " + k + " is also set to " + strconv.Quote(out[j].Value)}
			}
			continue
		}
		seen[k] = len(out)
		s.Key = k
		out = append(out, s)
	}
	return out, nil
}

// diff reads every key and returns those whose value differs from the
// wanted one. All missing keys are reported together.
func diff(rw keyRW, want []Setting) ([]Change, error) {
	var (
		drift   []Change
		missing []error
	)
	for _, s := range want {
		old, err := read(rw, s.Key)
		var ne *NotExistError
		switch {
		case errors.As(err, &ne):
			missing = append(missing, err)
			continue
		case err != nil:
			return nil, &Error{Op: "get", Key: s.Key, Err: err}
		}
		if normalizeValue(old) != normalizeValue(s.Value) {
			drift = append(drift, Change{Key: s.Key, Old: old, New: s.Value})
		}
	}
	if len(missing) > 0 {
		return nil, errors.Join(missing...)
	}
	return drift, nil
}

// rollback writes back the old values of done, last first.
func rollback(rw keyRW, done []Change) error {
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		if err := write(rw, done[i].Key, done[i].Old); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s to %q: %w", done[i].Key, done[i].Old, err))
		}
	}
	return errors.Join(errs...)
}

// read gets key, mapping a missing key to *NotExistError.
func read(rw keyRW, key string) (string, error) {
	v, err := rw.get(key)
	if errors.Is(err, fs.ErrNotExist) {
		return "", notExist(key)
	}
	if len(v) > 0 && v[len(v)-1] == '\n' {
		v = v[:len(v)-1]
	}
	return v, err
}

// write sets key, mapping a missing key to *NotExistError.
func write(rw keyRW, key, value string) error {
	err := rw.set(key, value)
	if errors.Is(err, fs.ErrNotExist) {
		return notExist(key)
	}
	return err
}

// opErr wraps a failure of Get or Set; typed errors pass as they are.
func opErr(ctx context.Context, op, key, value string, err error) error {
	var (
		ne *NotExistError
		oe *Error
	)
	if err == nil || errors.As(err, &ne) || errors.As(err, &oe) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	return &Error{Op: op, Key: key, Value: value, Err: err}
}
