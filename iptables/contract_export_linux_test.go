package iptables

// The contract tests live in package iptables_test: they import
// internal/contract, which imports this package. These are the test
// helpers of this package they use as oracles.
var (
	NFTElement       = nftElement
	LineDiff         = lineDiff
	NormNFT          = normNFT
	ListTable        = listTable
	ScriptListing    = scriptListing
	OwnedLines       = ownedLines
	IPSetMembers     = ipsetMembers
	WantIPSetMembers = wantIPSetMembers
	Flavors          = flavors
)

// Binary is the flavor's tool for family fam, e.g. "ip6tables-nft-save".
func (f Flavor) Binary(fam Family, tool string) string { return f.binary(fam, tool) }

// OwnedIPSet is the default instance's ipset of set s in family fam.
func OwnedIPSet(s SetName, fam Family) string { return newIPTNames("", false).ipset(s, fam) }

// OwnedIPSets are the default instance's ipsets of family fam.
func OwnedIPSets(fam Family) map[string]SetName { return newIPTNames("", false).ipsets(fam) }
