package vm

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
)

// Modules the guest loads, by name; their dependencies come along. The first
// ones bring up the devices the rig itself needs (virtio, 9p, the serial port);
// crc32c_generic must precede libcrc32c (a softdep busybox ignores).
//
// The guest cannot load modules on demand (the host's modprobe finds no
// modules for this kernel), so everything a test uses must be listed: a
// missing one shows up as ENOENT or EOPNOTSUPP from netlink (an nft
// expression, an iptables target) inside the rig. Linux 6.1 has no
// ip_vs_twos (it came in 6.2).
var Modules = []string{
	"virtio_pci", "virtio_console", "9pnet_virtio", "9p", "crc32c_generic",

	"ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_lc", "ip_vs_wlc", "ip_vs_sh", "ip_vs_mh",
	"ip_vs_dh", "ip_vs_sed", "ip_vs_nq", "ip_vs_lblc", "ip_vs_lblcr", "ip_vs_fo",
	"ip_vs_ovf", "ip_vs_pe_sip", "xt_ipvs",

	"dummy", "veth", "bridge", "br_netfilter", "ipip", "fou", "ip_gre", "sctp",

	"ip_set", "ip_set_hash_ip", "ip_set_hash_ipport", "ip_set_hash_ipportip",
	"ip_set_hash_ipportnet", "ip_set_hash_net", "ip_set_hash_netport",
	"ip_set_bitmap_port", "ip_set_list_set",

	"nf_conntrack", "nf_conntrack_netlink", "nf_nat",
	"nf_tables", "nft_ct", "nft_nat", "nft_masq", "nft_chain_nat", "nft_redir",
	"nft_reject", "nft_reject_inet", "nft_reject_ipv4", "nft_reject_ipv6",
	"nft_fib_inet", "nft_fib_ipv4", "nft_fib_ipv6", "nft_limit", "nft_quota",
	"nft_objref", "nft_compat", "nft_numgen", "nft_hash", "nft_log", "nft_socket",

	"ip_tables", "ip6_tables", "iptable_nat", "iptable_filter", "iptable_mangle",
	"iptable_raw", "ip6table_nat", "ip6table_filter", "ip6table_mangle", "ip6table_raw",
	"xt_set", "xt_MASQUERADE", "xt_mark", "xt_comment", "xt_conntrack", "xt_addrtype",
	"xt_multiport", "xt_nat", "xt_physdev", "xt_statistic", "xt_state", "xt_REDIRECT",
	"xt_limit", "xt_tcpudp", "ipt_REJECT", "ip6t_REJECT",
}

// moduleDeps is modules.dep: a module's path (relative to the modules
// directory) to the paths of every module it needs, transitively.
type moduleDeps map[string][]string

func parseModulesDep(r io.Reader) (moduleDeps, error) {
	deps := moduleDeps{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		mod, rest, ok := strings.Cut(s.Text(), ":")
		if !ok {
			return nil, fmt.Errorf("modules.dep: line without a colon: %q", s.Text())
		}
		deps[mod] = strings.Fields(rest)
	}
	return deps, s.Err()
}

// moduleName is the name modprobe knows a module path by.
func moduleName(p string) string {
	base := path.Base(p)
	base = base[:len(base)-len(path.Ext(base))]
	base = strings.TrimSuffix(base, ".ko") // foo.ko.xz
	return strings.ReplaceAll(base, "-", "_")
}

// loadOrder returns the module paths to insmod, dependencies first, each once.
// A wanted name that the kernel does not ship is an error naming it.
func (d moduleDeps) loadOrder(wanted []string) ([]string, error) {
	byName := make(map[string]string, len(d))
	for p := range d {
		byName[moduleName(p)] = p
	}
	var (
		order []string
		state = map[string]int{} // 1 visiting, 2 done
		visit func(p string) error
	)
	visit = func(p string) error {
		switch state[p] {
		case 1:
			return fmt.Errorf("modules.dep: dependency cycle through %s", p)
		case 2:
			return nil
		}
		state[p] = 1
		for _, dep := range d[p] {
			if _, ok := d[dep]; !ok {
				return fmt.Errorf("modules.dep: %s needs %s, which is not listed", p, dep)
			}
			if err := visit(dep); err != nil {
				return err
			}
		}
		state[p] = 2
		order = append(order, p)
		return nil
	}
	var missing []string
	for _, name := range wanted {
		p, ok := byName[strings.ReplaceAll(name, "-", "_")]
		if !ok {
			missing = append(missing, name)
			continue
		}
		if err := visit(p); err != nil {
			return nil, err
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the kernel ships no module named %s", strings.Join(missing, ", "))
	}
	return order, nil
}

// leaveOut checks a list of modules for the guest to leave out (by
// modprobe name) against the load order of wanted: each must be one the
// rig loads, and none may be needed by one it keeps (that one would fail
// to load, leaving out more than asked). It returns them as their files
// are named, which is how the init script matches them.
func (d moduleDeps) leaveOut(wanted, without []string) ([]string, error) {
	order, err := d.loadOrder(wanted)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	var files []string
	for _, name := range without {
		n := strings.ReplaceAll(name, "-", "_")
		found := false
		for _, p := range order {
			if moduleName(p) == n {
				found = true
				out[p] = true
				base := path.Base(p)
				files = append(files, base[:strings.Index(base, ".ko")])
			}
		}
		if !found {
			return nil, fmt.Errorf("leaving out %s: the guest does not load it", name)
		}
	}
	for _, p := range order {
		if out[p] {
			continue
		}
		for _, dep := range d[p] {
			if out[dep] {
				return nil, fmt.Errorf("leaving out %s: %s needs it", moduleName(dep), moduleName(p))
			}
		}
	}
	return files, nil
}
