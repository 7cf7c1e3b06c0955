//go:build !linux

package agent

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"github.com/vishvananda/netns"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

// Kernel holds the real kernel clients of one network namespace; only on
// Linux.
type Kernel struct{}

var errNotLinux = errors.New("agent: the kernel clients need Linux")

// OpenKernel fails: IPVS is Linux's.
func OpenKernel(netns.NsHandle) (*Kernel, error) { return nil, errNotLinux }

// NewProxier fails.
func (k *Kernel) NewProxier(*proxier.Config) (*proxier.Proxier, error) { return nil, errNotLinux }

// SetTimeouts fails.
func (k *Kernel) SetTimeouts(context.Context, ipvs.Timeouts) error { return errNotLinux }

// NodeAddresses fails.
func (k *Kernel) NodeAddresses() ([]netip.Addr, error) { return nil, errNotLinux }

// Listen fails.
func (k *Kernel) Listen(string, string) (net.Listener, error) { return nil, errNotLinux }

// Close does nothing.
func (k *Kernel) Close() error { return nil }
