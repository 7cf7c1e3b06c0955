package dummy

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The values link_wire.go and addr_wire.go spell out are Linux's.
func TestWireConstantsAreLinux(t *testing.T) {
	for _, c := range []struct {
		name      string
		ours, sys int
	}{
		{"RTM_NEWLINK", rtmNewLink, unix.RTM_NEWLINK},
		{"RTM_DELLINK", rtmDelLink, unix.RTM_DELLINK},
		{"RTM_GETLINK", rtmGetLink, unix.RTM_GETLINK},
		{"RTM_SETLINK", rtmSetLink, unix.RTM_SETLINK},
		{"RTM_NEWADDR", rtmNewAddr, unix.RTM_NEWADDR},
		{"RTM_DELADDR", rtmDelAddr, unix.RTM_DELADDR},
		{"RTM_GETADDR", rtmGetAddr, unix.RTM_GETADDR},
		{"IFLA_ADDRESS", iflaAddress, unix.IFLA_ADDRESS},
		{"IFLA_IFNAME", iflaIfname, unix.IFLA_IFNAME},
		{"IFLA_TXQLEN", iflaTxqlen, unix.IFLA_TXQLEN},
		{"IFLA_LINKINFO", iflaLinkinfo, unix.IFLA_LINKINFO},
		{"IFLA_IFALIAS", iflaIfalias, unix.IFLA_IFALIAS},
		{"IFLA_INFO_KIND", iflaInfoKind, unix.IFLA_INFO_KIND},
		{"IFF_UP", iffUp, unix.IFF_UP},
		{"IFF_NOARP", iffNoARP, unix.IFF_NOARP},
		{"sizeof(struct ifinfomsg)", ifinfomsgLen, unix.SizeofIfInfomsg},
		{"IFA_ADDRESS", ifaAddress, unix.IFA_ADDRESS},
		{"IFA_LOCAL", ifaLocal, unix.IFA_LOCAL},
		{"IFA_F_NODAD", ifaFNoDAD, unix.IFA_F_NODAD},
		{"sizeof(struct ifaddrmsg)", ifaddrmsgLen, unix.SizeofIfAddrmsg},
		{"AF_INET", afInet, unix.AF_INET},
		{"AF_INET6", afInet6, unix.AF_INET6},
		{"NLM_F_DUMP_INTR", flagDumpIntr, unix.NLM_F_DUMP_INTR},
	} {
		if c.ours != c.sys {
			t.Errorf("%s = %d here, %d in x/sys/unix", c.name, c.ours, c.sys)
		}
	}
}
