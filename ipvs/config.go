package ipvs

import (
	"fmt"
	"time"
)

// Timeouts are the connection timeouts of the namespace (ipvsadm
// --set tcp tcpfin udp). Whole seconds. In SetTimeouts, 0 leaves a value
// unchanged.
type Timeouts struct {
	TCP    time.Duration // established TCP connections
	TCPFin time.Duration // TCP connections after a FIN
	UDP    time.Duration // UDP "connections"
}

// Version is the IPVS version code (IP_VS_VERSION_CODE, e.g. 0x010201 for
// 1.2.1).
type Version uint32

func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v>>16&0xff, v>>8&0xff, v&0xff)
}

// Info is the kernel's IPVS information.
type Info struct {
	Version Version
	// ConnTableSize is the size of the connection hash table
	// (the ip_vs module's conn_tab_bits parameter).
	ConnTableSize uint32
}
