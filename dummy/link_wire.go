package dummy

import (
	"encoding/binary"

	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// Linux's values for links and addresses (include/uapi/linux/rtnetlink.h,
// if_link.h, if.h, if_addr.h), spelled out so that the encoding and its
// tests build and run on every GOOS; link_wire_linux_test.go checks them
// against x/sys/unix.
const (
	rtmNewLink   = 16   // RTM_NEWLINK
	rtmDelLink   = 17   // RTM_DELLINK
	rtmGetLink   = 18   // RTM_GETLINK
	rtmSetLink   = 19   // RTM_SETLINK
	iflaAddress  = 1    // IFLA_ADDRESS
	iflaIfname   = 3    // IFLA_IFNAME
	iflaTxqlen   = 13   // IFLA_TXQLEN
	iflaLinkinfo = 18   // IFLA_LINKINFO
	iflaIfalias  = 20   // IFLA_IFALIAS
	iflaInfoKind = 1    // IFLA_INFO_KIND, in IFLA_LINKINFO
	iffUp        = 0x1  // IFF_UP
	iffNoARP     = 0x80 // IFF_NOARP
	ifinfomsgLen = 16   // struct ifinfomsg
	rtmNewAddr   = 20   // RTM_NEWADDR
	rtmDelAddr   = 21   // RTM_DELADDR
	rtmGetAddr   = 22   // RTM_GETADDR
	ifaAddress   = 1    // IFA_ADDRESS
	ifaLocal     = 2    // IFA_LOCAL
	ifaFNoDAD    = 0x02 // IFA_F_NODAD
	ifaddrmsgLen = 8    // struct ifaddrmsg
)

// kind is the rtnetlink link kind of a dummy link (IFLA_INFO_KIND).
const kind = "dummy"

// link is a link as the kernel reports it, the fields the Client decides
// on.
type link struct {
	index int
	flags uint32 // ifi_flags: IFF_UP, IFF_NOARP, ...
	name  string
	alias string // "" for none
	kind  string // IFLA_INFO_KIND, "" for a link without one
}

// typ is the link's type as LinkTypeError reports it: its kind, or
// "device" for a link without one.
func (l link) typ() string {
	if l.kind == "" {
		return "device"
	}
	return l.kind
}

// ifinfomsg is the fixed head of a link message: struct ifinfomsg with
// family AF_UNSPEC, the link's index (0 for none) and the flags to set
// among those change selects.
func ifinfomsg(index int, flags, change uint32) []byte {
	b := make([]byte, ifinfomsgLen, 64)
	ne := binary.NativeEndian
	ne.PutUint32(b[4:8], uint32(int32(index)))
	ne.PutUint32(b[8:12], flags)
	ne.PutUint32(b[12:16], change)
	return b
}

// newLinkMessage is the body of the RTM_NEWLINK request (to be sent with
// NLM_F_CREATE|NLM_F_EXCL) that creates a dummy link called name: the
// name, alias (which the kernel ignores on creation, so the caller sets it
// again), a transmit queue length of 0, the hardware address hw if not
// nil, and IFLA_LINKINFO with the kind.
func newLinkMessage(name, alias string, hw []byte) []byte {
	e := nlattr.NewEncoder(ifinfomsg(0, 0, 0))
	e.String(iflaIfname, name)
	if alias != "" {
		e.Attr(iflaIfalias, []byte(alias))
	}
	e.Uint32(iflaTxqlen, 0)
	if hw != nil {
		e.Attr(iflaAddress, hw)
	}
	info := e.Nest(iflaLinkinfo)
	e.Attr(iflaInfoKind, []byte(kind))
	e.End(info)
	return e.Bytes()
}

// getLinkMessage is the body of an RTM_GETLINK request for the link called
// name.
func getLinkMessage(name string) []byte {
	e := nlattr.NewEncoder(ifinfomsg(0, 0, 0))
	e.String(iflaIfname, name)
	return e.Bytes()
}

// setLinkAttrMessage is the body of an RTM_SETLINK request that sets one
// string attribute (IFLA_IFALIAS, IFLA_IFNAME) of link index to v.
func setLinkAttrMessage(index int, typ uint16, v string) []byte {
	e := nlattr.NewEncoder(ifinfomsg(index, 0, 0))
	e.Attr(typ, []byte(v))
	return e.Bytes()
}

// setLinkFlagsMessage is the body of a request that sets flag (IFF_NOARP,
// IFF_UP) on link index, leaving the other flags as they are.
func setLinkFlagsMessage(index int, flag uint32) []byte {
	return ifinfomsg(index, flag, flag)
}

// delLinkMessage is the body of an RTM_DELLINK request for link index.
func delLinkMessage(index int) []byte { return ifinfomsg(index, 0, 0) }

// parseLink decodes the body of an RTM_NEWLINK message. ok is false for a
// message too short or malformed (an attribute cut short, or bytes after
// the last one that are no attribute).
func parseLink(b []byte) (l link, ok bool) {
	if len(b) < ifinfomsgLen {
		return link{}, false
	}
	ne := binary.NativeEndian
	l.index = int(int32(ne.Uint32(b[4:8])))
	l.flags = ne.Uint32(b[8:12])
	d := nlattr.NewDecoder(b[ifinfomsgLen:])
	for d.Next() {
		switch d.Type() {
		case iflaIfname:
			l.name = d.String()
		case iflaIfalias:
			l.alias = d.String()
		case iflaLinkinfo:
			info := d.Nested()
			for info.Next() {
				if info.Type() == iflaInfoKind {
					l.kind = info.String()
				}
			}
			if info.Err() != nil {
				return link{}, false
			}
		}
	}
	if d.Err() != nil {
		return link{}, false
	}
	return l, true
}
