package ipset

import (
	"context"
	"errors"

	"github.com/ipvskit/ipvskit/internal/kerr"
)

// TypeRevision returns the newest revision the kernel has of set type t for
// family f (FamilyUnspec for bitmap:port), changing nothing: it is the TYPE
// command, which Create also sends, so a kernel that loads modules on demand
// loads the type's. If the kernel lacks the type the error wraps
// ErrNotSupported and names the module (e.g. ip_set_hash_ipport).
func (c *Client) TypeRevision(ctx context.Context, t Type, f Family) (uint8, error) {
	if !t.valid() {
		return 0, &ValidationError{Field: "type", Value: t.String(), Reason: "not a set type of this package"}
	}
	rev, err := c.c.revision(ctx, t, f)
	if errors.Is(err, ErrNotSupported) {
		return 0, typeFeature(t, f).Missing(err)
	}
	return rev, err
}

// typeFeature is set type t in family f, as a kernel feature.
func typeFeature(t Type, f Family) kerr.Feature {
	return kerr.Feature{Name: "ipset type " + t.String() + " (" + f.String() + ")", Module: t.module()}
}
