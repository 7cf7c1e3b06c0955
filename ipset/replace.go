package ipset

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"time"
)

// tempName is the name of the set Replace fills before swapping it in:
// derived from the live name, so that a temporary set left behind by a
// crashed Replace is found and reused by the next one.
func tempName(live string) string {
	h := fnv.New32a()
	h.Write([]byte(live))
	return fmt.Sprintf("ipvskit-tmp-%08x", h.Sum32())
}

// swapAttempts bounds how often Replace retries a swap that fails with EBUSY
// (a set being listed at that moment).
const swapAttempts = 10

func (c *client) replace(ctx context.Context, s *Set, entries []Entry) error {
	// Validate everything before touching the kernel.
	if err := s.Validate(); err != nil {
		return err
	}
	seen := make(map[Entry]struct{}, len(entries))
	uniq := entries[:0:0]
	for i := range entries {
		if err := entries[i].validate(s, fmt.Sprintf("entries[%d]", i)); err != nil {
			return err
		}
		k := entries[i].Key()
		if _, dup := seen[k]; dup {
			continue // the kernel would keep one; so do we (the first)
		}
		seen[k] = struct{}{}
		uniq = append(uniq, entries[i])
	}
	if n, m := len(uniq), s.maxElem(); uint64(n) > uint64(m) {
		return &ValidationError{Field: "entries", Value: fmt.Sprint(n, " entries"),
			Reason: fmt.Sprintf("more than the set's maxelem %d", m)}
	}

	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()

	live, err := c.header(ctx, s.Name)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case live.Type != s.Type || live.Family != s.family():
		return &Error{Op: "replace", Set: s.Name, Err: fmt.Errorf("%w: the set is %s %s, wanted %s %s",
			ErrTypeMismatch, live.Type, FamilyName(live.Family), s.Type, FamilyName(s.family()))}
	}

	tmp := *s
	tmp.Name = tempName(s.Name)
	if err := c.create(ctx, &tmp, false); errors.Is(err, fs.ErrExist) {
		// Left behind by an earlier Replace that did not finish.
		if err := c.simple(ctx, "destroy", cmdDestroy, tmp.Name); err != nil {
			return err
		}
		if err := c.create(ctx, &tmp, false); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	c.stepDone("created " + tmp.Name)
	cleanup := func(cause error) error {
		// The live set was not touched; drop the temporary one. Its
		// destroy must run even if ctx is what failed.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := c.simple(dctx, "destroy", cmdDestroy, tmp.Name); err != nil {
			return errors.Join(cause, err)
		}
		return cause
	}

	if err := c.send(ctx, cmdAdd, &tmp, uniq, false); err != nil {
		return cleanup(err)
	}
	c.stepDone("filled " + tmp.Name)

	if !exists {
		if err := c.twoNames(ctx, "rename", cmdRename, tmp.Name, s.Name); err != nil {
			return cleanup(err)
		}
		c.stepDone("renamed " + tmp.Name)
		return nil
	}
	for attempt := 1; ; attempt++ {
		err = c.twoNames(ctx, "swap", cmdSwap, tmp.Name, s.Name)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrInUse) || attempt == swapAttempts {
			return cleanup(err)
		}
		// EBUSY: a dump of one of the sets is running; it ends soon.
		select {
		case <-ctx.Done():
			return cleanup(err)
		case <-time.After(time.Duration(attempt) * time.Millisecond):
		}
	}
	c.stepDone("swapped " + tmp.Name)
	// tmp.Name now holds the old contents, unreferenced.
	if err := c.simple(ctx, "destroy", cmdDestroy, tmp.Name); err != nil {
		return fmt.Errorf("ipset replace %s: the set was replaced, but destroying its old contents failed (the next Replace retries): %w", s.Name, err)
	}
	c.stepDone("destroyed " + tmp.Name)
	return nil
}

func (c *client) stepDone(step string) {
	if c.step != nil {
		c.step(step)
	}
}
