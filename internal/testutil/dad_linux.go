package testutil

import (
	"errors"
	"io/fs"
	"os"
)

// NoDAD turns duplicate address detection off for the link name in the
// calling thread's namespace (call it inside NetNS.Do, before the link is
// set up). Without it the kernel's own link-local IPv6 address is tentative
// for about a second after the link comes up and then changes flags and
// gains a local route: a test that compares the namespace's addresses or
// routes before and after an action would see that as a change the action
// made. A kernel without IPv6 has nothing to turn off.
func NoDAD(name string) error {
	err := os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/accept_dad", []byte("0"), 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
