package ipset

// Constants of the kernel's ipset netlink protocol. Each comes from
// include/uapi/linux/netfilter/ipset/ip_set.h (or the header named beside it)
// and from include/uapi/linux/netfilter/nfnetlink.h.

const (
	nfnlSubsysIPSet = 6 // NFNL_SUBSYS_IPSET, nfnetlink.h
	nfnetlinkV0     = 0 // NFNETLINK_V0, nfnetlink.h

	protocolMax = 7 // IPSET_PROTOCOL
	protocolMin = 6 // IPSET_PROTOCOL_MIN

	maxNameLen    = 32  // IPSET_MAXNAMELEN, including the NUL
	maxCommentLen = 255 // IPSET_MAX_COMMENT_SIZE

	nfprotoUnspec = 0  // NFPROTO_UNSPEC, netfilter.h
	nfprotoIPv4   = 2  // NFPROTO_IPV4
	nfprotoIPv6   = 10 // NFPROTO_IPV6
)

// enum ipset_cmd
const (
	cmdProtocol = 1
	cmdCreate   = 2
	cmdDestroy  = 3
	cmdFlush    = 4
	cmdRename   = 5
	cmdSwap     = 6
	cmdList     = 7
	cmdAdd      = 9
	cmdDel      = 10
	cmdTest     = 11
	cmdHeader   = 12
	cmdType     = 13
)

// Attributes at command level.
const (
	attrProtocol    = 1  // IPSET_ATTR_PROTOCOL, u8
	attrSetName     = 2  // IPSET_ATTR_SETNAME, NUL-terminated string
	attrTypeName    = 3  // IPSET_ATTR_TYPENAME
	attrSetName2    = 3  // IPSET_ATTR_SETNAME2, at rename and swap
	attrRevision    = 4  // IPSET_ATTR_REVISION, u8
	attrFamily      = 5  // IPSET_ATTR_FAMILY, u8
	attrFlags       = 6  // IPSET_ATTR_FLAGS, be32
	attrData        = 7  // IPSET_ATTR_DATA, nested
	attrADT         = 8  // IPSET_ATTR_ADT, nested list of DATA
	attrLineNo      = 9  // IPSET_ATTR_LINENO, u32 in host order
	attrProtocolMin = 10 // IPSET_ATTR_PROTOCOL_MIN, u8
	attrRevisionMin = 10 // IPSET_ATTR_REVISION_MIN, u8
	attrIndex       = 11 // IPSET_ATTR_INDEX, be16
)

// Attributes inside DATA (create and element level).
const (
	attrIP        = 1  // IPSET_ATTR_IP, nested IPADDR_*
	attrIPTo      = 2  // IPSET_ATTR_IP_TO
	attrCIDR      = 3  // IPSET_ATTR_CIDR, u8
	attrPort      = 4  // IPSET_ATTR_PORT, be16
	attrPortTo    = 5  // IPSET_ATTR_PORT_TO, be16
	attrTimeout   = 6  // IPSET_ATTR_TIMEOUT, be32 seconds
	attrProto     = 7  // IPSET_ATTR_PROTO, u8
	attrCADTFlags = 8  // IPSET_ATTR_CADT_FLAGS, be32
	attrCADTLine  = 9  // IPSET_ATTR_CADT_LINENO, u32 in host order
	attrInitVal   = 17 // IPSET_ATTR_INITVAL, be32
	attrHashSize  = 18 // IPSET_ATTR_HASHSIZE, be32
	attrMaxElem   = 19 // IPSET_ATTR_MAXELEM, be32
	attrNetmask   = 20 // IPSET_ATTR_NETMASK, u8
	attrBucket    = 21 // IPSET_ATTR_BUCKETSIZE, u8
	attrResize    = 22 // IPSET_ATTR_RESIZE, u8
	attrSize      = 23 // IPSET_ATTR_SIZE, be32
	attrElements  = 24 // IPSET_ATTR_ELEMENTS, be32
	attrRefs      = 25 // IPSET_ATTR_REFERENCES, be32
	attrMemSize   = 26 // IPSET_ATTR_MEMSIZE, be32
	attrIP2       = 20 // IPSET_ATTR_IP2 (ADT level), nested IPADDR_*
	attrCIDR2     = 21 // IPSET_ATTR_CIDR2, u8
	attrBytes     = 24 // IPSET_ATTR_BYTES, be64
	attrPackets   = 25 // IPSET_ATTR_PACKETS, be64
	attrComment   = 26 // IPSET_ATTR_COMMENT, string
	attrPad       = 30 // IPSET_ATTR_PAD

	attrIPAddrIPv4 = 1 // IPSET_ATTR_IPADDR_IPV4, be32 (4 bytes)
	attrIPAddrIPv6 = 2 // IPSET_ATTR_IPADDR_IPV6, 16 bytes
)

// Command-level flags (enum ipset_cmd_flags), sent in IPSET_ATTR_FLAGS.
const (
	flagListSetName = 1 << 1 // IPSET_FLAG_LIST_SETNAME
	flagListHeader  = 1 << 2 // IPSET_FLAG_LIST_HEADER
)

// CADT flags (enum ipset_cadt_flags), sent in IPSET_ATTR_CADT_FLAGS.
const (
	cadtNoMatch      = 1 << 2 // IPSET_FLAG_NOMATCH
	cadtWithCounters = 1 << 3 // IPSET_FLAG_WITH_COUNTERS
	cadtWithComment  = 1 << 4 // IPSET_FLAG_WITH_COMMENT
	cadtWithForceAdd = 1 << 5 // IPSET_FLAG_WITH_FORCEADD
)

// Netlink message header flags (linux/netlink.h).
const (
	nlmFRequest = 0x1
	nlmFAck     = 0x4
	nlmFRoot    = 0x100
	nlmFMatch   = 0x200
	nlmFDump    = nlmFRoot | nlmFMatch
	nlmFExcl    = 0x200 // on new requests: fail if the object exists
)
