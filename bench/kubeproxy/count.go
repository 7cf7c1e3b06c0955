package main

import (
	"bytes"
	"sync/atomic"
	"time"

	utilipset "k8s.io/kubernetes/pkg/proxy/ipvs/ipset"
	utilipvs "k8s.io/kubernetes/pkg/proxy/ipvs/util"
	utiliptables "k8s.io/kubernetes/pkg/util/iptables"
)

// calls counts what a sync asked of the kernel through kube-proxy's
// utilities: IPVS requests (each a netlink request; a list is one dump per
// call), and runs of the ipset and iptables tools (each a process). The
// addresses kube-proxy binds to its dummy link go through a netlink handle it
// makes itself and are not counted.
type calls struct {
	IPVS     int64 `json:"ipvs"`
	IPVSRead int64 `json:"ipvsRead"`
	IPSet    int64 `json:"ipset"`
	IPTables int64 `json:"iptables"`
}

func (c calls) minus(d calls) calls {
	return calls{c.IPVS - d.IPVS, c.IPVSRead - d.IPVSRead, c.IPSet - d.IPSet, c.IPTables - d.IPTables}
}

type counters struct{ ipvs, ipvsRead, ipset, iptables atomic.Int64 }

func (c *counters) snapshot() calls {
	return calls{c.ipvs.Load(), c.ipvsRead.Load(), c.ipset.Load(), c.iptables.Load()}
}

type countedIPVS struct {
	utilipvs.Interface
	c *counters
}

func (i *countedIPVS) w()           { i.c.ipvs.Add(1) }
func (i *countedIPVS) r()           { i.c.ipvsRead.Add(1) }
func (i *countedIPVS) Flush() error { i.w(); return i.Interface.Flush() }
func (i *countedIPVS) AddVirtualServer(v *utilipvs.VirtualServer) error {
	i.w()
	return i.Interface.AddVirtualServer(v)
}
func (i *countedIPVS) UpdateVirtualServer(v *utilipvs.VirtualServer) error {
	i.w()
	return i.Interface.UpdateVirtualServer(v)
}
func (i *countedIPVS) DeleteVirtualServer(v *utilipvs.VirtualServer) error {
	i.w()
	return i.Interface.DeleteVirtualServer(v)
}
func (i *countedIPVS) GetVirtualServer(v *utilipvs.VirtualServer) (*utilipvs.VirtualServer, error) {
	i.r()
	return i.Interface.GetVirtualServer(v)
}
func (i *countedIPVS) GetVirtualServers() ([]*utilipvs.VirtualServer, error) {
	i.r()
	return i.Interface.GetVirtualServers()
}
func (i *countedIPVS) AddRealServer(v *utilipvs.VirtualServer, r *utilipvs.RealServer) error {
	i.w()
	return i.Interface.AddRealServer(v, r)
}
func (i *countedIPVS) GetRealServers(v *utilipvs.VirtualServer) ([]*utilipvs.RealServer, error) {
	i.r()
	return i.Interface.GetRealServers(v)
}
func (i *countedIPVS) DeleteRealServer(v *utilipvs.VirtualServer, r *utilipvs.RealServer) error {
	i.w()
	return i.Interface.DeleteRealServer(v, r)
}
func (i *countedIPVS) UpdateRealServer(v *utilipvs.VirtualServer, r *utilipvs.RealServer) error {
	i.w()
	return i.Interface.UpdateRealServer(v, r)
}
func (i *countedIPVS) ConfigureTimeouts(a, b, c time.Duration) error {
	i.w()
	return i.Interface.ConfigureTimeouts(a, b, c)
}

type countedIPSet struct {
	utilipset.Interface
	c *counters
}

func (s *countedIPSet) n() { s.c.ipset.Add(1) }
func (s *countedIPSet) FlushSet(set string) error {
	s.n()
	return s.Interface.FlushSet(set)
}
func (s *countedIPSet) DestroySet(set string) error {
	s.n()
	return s.Interface.DestroySet(set)
}
func (s *countedIPSet) DestroyAllSets() error { s.n(); return s.Interface.DestroyAllSets() }
func (s *countedIPSet) CreateSet(set *utilipset.IPSet, ignoreExist bool) error {
	s.n()
	return s.Interface.CreateSet(set, ignoreExist)
}
func (s *countedIPSet) AddEntry(e string, set *utilipset.IPSet, ignoreExist bool) error {
	s.n()
	return s.Interface.AddEntry(e, set, ignoreExist)
}
func (s *countedIPSet) DelEntry(e, set string) error { s.n(); return s.Interface.DelEntry(e, set) }
func (s *countedIPSet) TestEntry(e, set string) (bool, error) {
	s.n()
	return s.Interface.TestEntry(e, set)
}
func (s *countedIPSet) ListEntries(set string) ([]string, error) {
	s.n()
	return s.Interface.ListEntries(set)
}
func (s *countedIPSet) ListSets() ([]string, error) { s.n(); return s.Interface.ListSets() }
func (s *countedIPSet) GetVersion() (string, error) { s.n(); return s.Interface.GetVersion() }

// countedIPTables counts the calls that run a tool; kube-proxy's IPVS proxier
// makes its rules with one iptables-restore per table and a few checks.
type countedIPTables struct {
	utiliptables.Interface
	c *counters
}

func (t *countedIPTables) n() { t.c.iptables.Add(1) }
func (t *countedIPTables) EnsureChain(tb utiliptables.Table, ch utiliptables.Chain) (bool, error) {
	t.n()
	return t.Interface.EnsureChain(tb, ch)
}
func (t *countedIPTables) FlushChain(tb utiliptables.Table, ch utiliptables.Chain) error {
	t.n()
	return t.Interface.FlushChain(tb, ch)
}
func (t *countedIPTables) DeleteChain(tb utiliptables.Table, ch utiliptables.Chain) error {
	t.n()
	return t.Interface.DeleteChain(tb, ch)
}
func (t *countedIPTables) ChainExists(tb utiliptables.Table, ch utiliptables.Chain) (bool, error) {
	t.n()
	return t.Interface.ChainExists(tb, ch)
}
func (t *countedIPTables) EnsureRule(p utiliptables.RulePosition, tb utiliptables.Table, ch utiliptables.Chain, args ...string) (bool, error) {
	t.n()
	return t.Interface.EnsureRule(p, tb, ch, args...)
}
func (t *countedIPTables) DeleteRule(tb utiliptables.Table, ch utiliptables.Chain, args ...string) error {
	t.n()
	return t.Interface.DeleteRule(tb, ch, args...)
}
func (t *countedIPTables) SaveInto(tb utiliptables.Table, buf *bytes.Buffer) error {
	t.n()
	return t.Interface.SaveInto(tb, buf)
}
func (t *countedIPTables) Restore(tb utiliptables.Table, data []byte, flush utiliptables.FlushFlag, counters utiliptables.RestoreCountersFlag) error {
	t.n()
	return t.Interface.Restore(tb, data, flush, counters)
}
func (t *countedIPTables) RestoreAll(data []byte, flush utiliptables.FlushFlag, counters utiliptables.RestoreCountersFlag) error {
	t.n()
	return t.Interface.RestoreAll(data, flush, counters)
}
