package iptables

import (
	"errors"
	"testing"
)

// Instance names that would give another program's names are refused, as
// are bad ones, before anything is opened.
func TestNewNFTablesRefusesInstances(t *testing.T) {
	for _, name := range []string{"kube", "docker", "filter", "nat", "mangle", "raw", "security", "broute", "kube-proxy", "Ipvskit", "a_b", "abcdefghijklm"} {
		b, err := NewNFTables(&NFTablesConfig{Instance: name})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != "NFTablesConfig.Instance" || ve.Value != name {
			if b != nil {
				b.Close()
			}
			t.Errorf("Instance %q: want a *ValidationError naming NFTablesConfig.Instance and the value, got %v", name, err)
		}
	}
}

func TestRenderNFTRefusesInstances(t *testing.T) {
	r := sample(IPv4, Options{})
	for _, name := range []string{"filter", "kube", "a b"} {
		var ve *ValidationError
		if _, err := RenderNFT(r, name); !errors.As(err, &ve) || ve.Value != name {
			t.Errorf("RenderNFT(%q): want a *ValidationError, got %v", name, err)
		}
	}
}
