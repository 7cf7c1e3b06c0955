// Package ipvs is a client for the Linux kernel's IP Virtual Server (IPVS)
// over generic netlink: services, destinations, schedulers, persistence,
// tunnels, 64-bit statistics, timeouts, sync daemons, zero and flush, and a
// batch path that sends many requests per system call.
package ipvs
