package iptables

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ObjectDrift is one difference, found by Check, between an object a back end
// owns and what the back end last applied to it.
type ObjectDrift struct {
	// Object names the object in its tool's notation: for the nftables
	// back end "table ip ipvskit", "chain ip ipvskit services", "set ip
	// ipvskit cluster-ip"; for the iptables back end "chain nat
	// KUBE-SERVICES", "jump nat PREROUTING -> KUBE-SERVICES", "set
	// KUBE-CLUSTER-IP" (an ipset).
	Object string
	// Problem says what is wrong: "missing", or what differs, with counts
	// and the first few members or rules concerned.
	Problem string
	// Missing and Extra count the set members or rules that the kernel
	// lacks, and that it has beyond what was applied. Both are zero when
	// the object itself is missing or one of its properties differs.
	Missing, Extra int
}

// String returns "object: problem".
func (d ObjectDrift) String() string { return d.Object + ": " + d.Problem }

// ApplyStats says what the last Apply, ApplyFull or Repair of a back end
// sent to the kernel and where its time went. A failed call counts what it
// sent before the failure; a call refused by validation counts nothing.
type ApplyStats struct {
	// Full says the call rewrote everything (the nftables table re-created,
	// or every ipset replaced and the chains restored).
	Full bool
	// ElementsAdded and ElementsDeleted count the set members sent. A full
	// sync writes every member as an addition and deletes none (the old
	// sets go whole).
	ElementsAdded, ElementsDeleted int
	// SetsReplaced counts the sets written whole: every set of the table
	// (nftables) or every ipset replaced atomically (iptables) on a full
	// sync, none on an incremental one.
	SetsReplaced int
	// RuleWrites counts rule writes: iptables-restore runs (the owned
	// chains and the jump rules), or the chain and rule messages of an
	// nftables batch.
	RuleWrites int
	// SetsTime and RulesTime are the time spent writing sets and rules.
	// An nftables full sync is one atomic batch that re-creates the sets
	// and the rules together and cannot be split: all of its time is in
	// RulesTime (SetsTime stays zero; ElementsAdded still counts its
	// members). For the iptables back end, RulesTime includes the
	// iptables-save that looks for the jump rules.
	SetsTime, RulesTime time.Duration
}

// maxExamples bounds the members or rules an ObjectDrift's Problem names.
const maxExamples = 3

// countProblem describes a difference of counted things ("members",
// "rules"): how many are missing and extra, with a few of each.
func countProblem(what string, missing, extra []string) string {
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d %s missing (%s)", len(missing), what, examples(missing)))
	}
	if len(extra) > 0 {
		parts = append(parts, fmt.Sprintf("%d extra (%s)", len(extra), examples(extra)))
	}
	return strings.Join(parts, ", ")
}

func examples(s []string) string {
	if len(s) <= maxExamples {
		return strings.Join(s, "; ")
	}
	return strings.Join(s[:maxExamples], "; ") + fmt.Sprintf("; and %d more", len(s)-maxExamples)
}

// item is a rule or member: its identity (key) and how a report shows it.
type item struct{ key, text string }

// diffItems returns the texts of the items of want missing from got, and of
// got not in want, as multisets (a duplicate counts), each in list order.
func diffItems(want, got []item) (missing, extra []string) {
	n := make(map[string]int, len(got))
	for _, g := range got {
		n[g.key]++
	}
	for _, w := range want {
		if n[w.key] > 0 {
			n[w.key]--
			continue
		}
		missing = append(missing, w.text)
	}
	for _, g := range got {
		if n[g.key] > 0 {
			n[g.key]--
			extra = append(extra, g.text)
		}
	}
	return missing, extra
}

// listDrift compares the members (or, ordered, the rules) of object with
// what was applied, and returns the ObjectDrift, or false if they are equal.
func listDrift(object, what string, want, got []item, ordered bool) (ObjectDrift, bool) {
	missing, extra := diffItems(want, got)
	if len(missing)+len(extra) > 0 {
		return ObjectDrift{Object: object, Problem: countProblem(what, missing, extra), Missing: len(missing), Extra: len(extra)}, true
	}
	if ordered && !slices.EqualFunc(want, got, func(a, b item) bool { return a.key == b.key }) {
		return ObjectDrift{Object: object, Problem: what + " out of order"}, true
	}
	return ObjectDrift{}, false
}
