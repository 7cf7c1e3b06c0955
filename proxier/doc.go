// Package proxier will hold the Proxier: a desired state of services and
// endpoints in, a kernel (IPVS, the VIP link, sets, netfilter rules, sysctls)
// that serves it out. It is not written yet.
package proxier
