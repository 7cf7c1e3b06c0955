// Package nsfd is the one place where ipvskit's clients turn a Config.NetNS
// value into a network namespace they hold for their lifetime.
//
// The rule, the same for every client (it is mdlayher/netlink's
// Config.NetNS): 0 means the namespace of the thread that calls New; a
// positive value is a file descriptor of a network namespace, which New
// duplicates, so the caller may close theirs as soon as New returns; a
// negative value (netns.None() included) is invalid, and New refuses it
// before it opens anything.
package nsfd

import "strconv"

// Rule is the rule in one sentence, for validation errors.
const Rule = "want 0 (the calling thread's namespace) or a positive file descriptor of a network namespace"

// Check reports whether fd follows the rule. When it does not, it returns
// the value as text and the reason, for the caller's own typed validation
// error (which names the field).
func Check(fd int) (value, reason string, ok bool) {
	if fd >= 0 {
		return "", "", true
	}
	return strconv.Itoa(fd), Rule, false
}
