package ipset

import (
	"net/netip"

	"github.com/mdlayher/netlink"
)

// Request encoding. Every ipset request is an nfnetlink message of subsystem
// NFNL_SUBSYS_IPSET: a struct nfgenmsg, then IPSET_ATTR_PROTOCOL, then the
// command's attributes.

// newRequest starts a request for cmd with the protocol attribute.
func newRequest(proto uint8, cmd uint8, size int) *attrWriter {
	// struct nfgenmsg: family, version, res_id (be16). The kernel ignores
	// the family for ipset; ipset(8) sends AF_INET.
	w := newWriter(append(make([]byte, 0, size), nfprotoIPv4, nfnetlinkV0, 0, 0))
	w.Uint8(attrProtocol, proto)
	return w
}

func message(cmd uint8, flags netlink.HeaderFlags, w *attrWriter) netlink.Message {
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(nfnlSubsysIPSet<<8 | uint16(cmd)), Flags: flags},
		Data:   w.Bytes(),
	}
}

// protocolRequest asks the kernel which protocol versions it speaks.
func protocolRequest() netlink.Message {
	return message(cmdProtocol, 0, newRequest(protocolMax, cmdProtocol, 16))
}

// typeRequest asks for the revisions the kernel has of a set type.
func typeRequest(proto uint8, t Type, f Family) netlink.Message {
	w := newRequest(proto, cmdType, 48)
	w.String(attrTypeName, t.String())
	w.Uint8(attrFamily, uint8(f))
	return message(cmdType, 0, w)
}

// createRequest creates s (validated) with the given type revision. Without
// exist, the request carries NLM_F_EXCL and fails if the set exists; with
// it, creating a set that exists with the same options succeeds.
func createRequest(proto uint8, s *Set, revision uint8, exist bool) netlink.Message {
	w := newRequest(proto, cmdCreate, 128)
	w.String(attrSetName, s.Name)
	w.String(attrTypeName, s.Type.String())
	w.Uint8(attrRevision, revision)
	w.Uint8(attrFamily, uint8(s.family()))
	n := w.Nest(attrData)
	if s.Type == BitmapPort {
		from, to := s.portRange()
		w.be16(attrPort, from)
		w.be16(attrPortTo, to)
	} else {
		if s.HashSize != 0 {
			w.be32(attrHashSize, s.HashSize)
		}
		if s.MaxElem != 0 {
			w.be32(attrMaxElem, s.MaxElem)
		}
	}
	if s.hasTimeouts() {
		w.be32(attrTimeout, uint32(s.Timeout.Seconds()))
	}
	var cadt uint32
	if s.Counters {
		cadt |= cadtWithCounters
	}
	if s.Comment {
		cadt |= cadtWithComment
	}
	if cadt != 0 {
		w.be32(attrCADTFlags, cadt)
	}
	w.End(n)
	var flags netlink.HeaderFlags
	if !exist {
		flags = nlmFExcl
	}
	return message(cmdCreate, flags, w)
}

// nameRequest is a command that takes only a set name (destroy, flush,
// header); name may be empty for destroy and flush of every set. A destroy
// carries NLM_F_EXCL: without it the kernel ignores a missing set.
func nameRequest(proto, cmd uint8, name string) netlink.Message {
	w := newRequest(proto, cmd, 48)
	if name != "" {
		w.String(attrSetName, name)
	}
	var flags netlink.HeaderFlags
	if cmd == cmdDestroy {
		flags = nlmFExcl
	}
	return message(cmd, flags, w)
}

// twoNameRequest is rename or swap.
func twoNameRequest(proto, cmd uint8, from, to string) netlink.Message {
	w := newRequest(proto, cmd, 80)
	w.String(attrSetName, from)
	w.String(attrSetName2, to)
	return message(cmd, 0, w)
}

// listRequest dumps one set (or all when name is empty), with or without
// members.
func listRequest(proto uint8, name string, headersOnly bool) netlink.Message {
	w := newRequest(proto, cmdList, 64)
	if name != "" {
		w.String(attrSetName, name)
	}
	if headersOnly {
		w.be32(attrFlags, flagListHeader)
	}
	return message(cmdList, netlink.Dump, w)
}

// elemRequest adds, deletes or tests (cmd) one element, in an
// IPSET_ATTR_DATA nest. excl is as for adtRequest.
func elemRequest(proto, cmd uint8, name string, e *Entry, excl bool) netlink.Message {
	w := newRequest(proto, cmd, 64+elemSize(e))
	w.String(attrSetName, name)
	n := w.Nest(attrData)
	writeElem(w, e, 0)
	w.End(n)
	var flags netlink.HeaderFlags
	if excl {
		flags = nlmFExcl
	}
	return message(cmd, flags, w)
}

// adtRequest adds or deletes entries (cmdAdd or cmdDel) in one message: an
// IPSET_ATTR_ADT nest holding one IPSET_ATTR_DATA per entry, each numbered
// with its line (firstLine, firstLine+1, ...; must not be 0) so that the
// kernel's error for a failing entry names it. Processing of a message stops
// at its first failing entry. With excl, adding an entry that is already
// present (or deleting one that is not) is an error; without it, it is not.
func adtRequest(proto, cmd uint8, name string, entries []Entry, firstLine uint32, excl bool) netlink.Message {
	size := 64
	for i := range entries {
		size += elemSize(&entries[i])
	}
	w := newRequest(proto, cmd, size)
	w.String(attrSetName, name)
	w.Uint32(attrLineNo, firstLine)
	n := w.Nest(attrADT)
	for i := range entries {
		d := w.Nest(attrData)
		writeElem(w, &entries[i], firstLine+uint32(i))
		w.End(d)
	}
	w.End(n)
	var flags netlink.HeaderFlags
	if excl {
		flags = nlmFExcl
	}
	return message(cmd, flags, w)
}

// elemSize returns the encoded size of e's DATA nest (with a line number),
// attribute by attribute as writeElem writes them.
func elemSize(e *Entry) int {
	addr := func(a netip.Addr) int {
		if a.Is4() {
			return 4 + 8
		}
		return 4 + 20
	}
	n := 4 + 8 // nest header, LINENO
	switch {
	case e.Net.IsValid():
		n += addr(e.Net.Addr()) + 8
	case e.IP.IsValid():
		n += addr(e.IP)
	}
	if e.Port != 0 || e.Proto != 0 || !e.IP.IsValid() && !e.Net.IsValid() {
		n += 8
	}
	if e.Proto != 0 {
		n += 8
	}
	switch {
	case e.IP2.IsValid():
		n += addr(e.IP2)
	case e.Net2.IsValid():
		n += addr(e.Net2.Addr()) + 8
	}
	if e.Timeout != 0 {
		n += 8
	}
	if e.Packets != 0 {
		n += 12
	}
	if e.Bytes != 0 {
		n += 12
	}
	if e.Comment != "" {
		n += 4 + (len(e.Comment)+1+3)&^3
	}
	return n
}

// writeElem writes the attributes of one element (inside a DATA nest).
func writeElem(w *attrWriter, e *Entry, line uint32) {
	switch {
	case e.Net.IsValid():
		w.addr(attrIP, e.Net.Addr())
		w.Uint8(attrCIDR, uint8(e.Net.Bits()))
	case e.IP.IsValid():
		w.addr(attrIP, e.IP)
	}
	if e.Port != 0 || e.Proto != 0 || !e.IP.IsValid() && !e.Net.IsValid() {
		w.be16(attrPort, e.Port)
	}
	if e.Proto != 0 {
		w.Uint8(attrProto, uint8(e.Proto))
	}
	switch {
	case e.IP2.IsValid():
		w.addr(attrIP2, e.IP2)
	case e.Net2.IsValid():
		w.addr(attrIP2, e.Net2.Addr())
		w.Uint8(attrCIDR2, uint8(e.Net2.Bits()))
	}
	if e.Timeout != 0 {
		w.be32(attrTimeout, uint32(e.Timeout.Seconds()))
	}
	if e.Packets != 0 {
		w.be64(attrPackets, e.Packets)
	}
	if e.Bytes != 0 {
		w.be64(attrBytes, e.Bytes)
	}
	if e.Comment != "" {
		w.String(attrComment, e.Comment)
	}
	if line != 0 {
		w.Uint32(attrCADTLine, line)
	}
}
