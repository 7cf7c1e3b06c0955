package ipvs

// Generic netlink names and numbers of the IPVS family, from
// include/uapi/linux/ip_vs.h (line numbers of Debian 12's
// /usr/include/linux/ip_vs.h).

const (
	genlName    = "IPVS" // IPVS_GENL_NAME, line 293
	genlVersion = 1      // IPVS_GENL_VERSION, line 294

	svcFlagPersistent = 0x0001 // IP_VS_SVC_F_PERSISTENT, line 21
	svcFlagHashed     = 0x0002 // IP_VS_SVC_F_HASHED, line 22
	svcFlagOnePacket  = 0x0004 // IP_VS_SVC_F_ONEPACKET, line 23
)

// Commands: enum starting IPVS_CMD_UNSPEC, line 303.
const (
	cmdNewService = iota + 1
	cmdSetService
	cmdDelService
	cmdGetService
	cmdNewDest
	cmdSetDest
	cmdDelDest
	cmdGetDest
	cmdNewDaemon
	cmdDelDaemon
	cmdGetDaemon
	cmdSetConfig
	cmdGetConfig
	cmdSetInfo
	cmdGetInfo
	cmdZero
	cmdFlush
)

// Top-level attributes: enum starting IPVS_CMD_ATTR_UNSPEC, line 335.
const (
	cmdAttrService = iota + 1
	cmdAttrDest
	cmdAttrDaemon
	cmdAttrTimeoutTCP
	cmdAttrTimeoutTCPFin
	cmdAttrTimeoutUDP
)

// Service attributes: enum starting IPVS_SVC_ATTR_UNSPEC, line 353.
const (
	svcAttrAF = iota + 1
	svcAttrProtocol
	svcAttrAddr
	svcAttrPort
	svcAttrFWMark
	svcAttrSchedName
	svcAttrFlags
	svcAttrTimeout
	svcAttrNetmask
	svcAttrStats
	svcAttrPEName
	svcAttrStats64
)

// Destination attributes: enum starting IPVS_DEST_ATTR_UNSPEC, line 382.
const (
	destAttrAddr = iota + 1
	destAttrPort
	destAttrFwdMethod
	destAttrWeight
	destAttrUThresh
	destAttrLThresh
	destAttrActiveConns
	destAttrInactConns
	destAttrPersistConns
	destAttrStats
	destAttrAddrFamily
	destAttrStats64
	destAttrTunType
	destAttrTunPort
	destAttrTunFlags
)

// Sync daemon attributes: enum starting IPVS_DAEMON_ATTR_UNSPEC, line 419.
const (
	daemonAttrState = iota + 1
	daemonAttrMcastIfn
	daemonAttrSyncID
	daemonAttrSyncMaxLen
	daemonAttrMcastGroup
	daemonAttrMcastGroup6
	daemonAttrMcastPort
	daemonAttrMcastTTL
)

// Statistics attributes: enum starting IPVS_STATS_ATTR_UNSPEC, line 440.
const (
	statsAttrConns = iota + 1
	statsAttrInPkts
	statsAttrOutPkts
	statsAttrInBytes
	statsAttrOutBytes
	statsAttrCPS
	statsAttrInPPS
	statsAttrOutPPS
	statsAttrInBPS
	statsAttrOutBPS
)

// Info attributes: enum starting IPVS_INFO_ATTR_UNSPEC, line 460.
const (
	infoAttrVersion = iota + 1
	infoAttrConnTabSize
)
