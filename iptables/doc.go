// Package iptables will hold the service proxy's netfilter rules as one
// model, with an iptables-restore back end over ipsets and a native nftables
// back end. It is not written yet.
package iptables
