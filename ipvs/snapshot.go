package ipvs

// Snapshot is the whole IPVS table of a namespace: every service with its
// destinations, in the kernel's order.
type Snapshot struct {
	Services []ServiceSnapshot
}

// ServiceSnapshot is one service of a Snapshot with its destinations.
type ServiceSnapshot struct {
	ServiceInfo
	Destinations []DestinationInfo
}
