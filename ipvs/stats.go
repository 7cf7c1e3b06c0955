package ipvs

// Stats are the counters and rates of a service or destination. The kernel
// sends them twice: 64-bit (IPVS_*_ATTR_STATS64, since Linux 4.1) and
// 32-bit (IPVS_*_ATTR_STATS, where counters wrap); the 64-bit ones are used
// whenever present.
type Stats struct {
	Connections uint64 // connections scheduled
	PacketsIn   uint64 // packets from clients
	PacketsOut  uint64 // packets to clients
	BytesIn     uint64
	BytesOut    uint64

	// Rates, estimated by the kernel over a few seconds.
	CPS    uint64 // connections per second
	PPSIn  uint64 // packets per second in
	PPSOut uint64 // packets per second out
	BPSIn  uint64 // bytes per second in
	BPSOut uint64 // bytes per second out
}
