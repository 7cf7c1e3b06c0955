package vm

import (
	"strings"
	"testing"
)

const sampleDep = `kernel/net/netfilter/ipvs/ip_vs_rr.ko: kernel/net/netfilter/ipvs/ip_vs.ko kernel/net/netfilter/nf_conntrack.ko kernel/lib/libcrc32c.ko
kernel/net/netfilter/ipvs/ip_vs.ko: kernel/net/netfilter/nf_conntrack.ko kernel/lib/libcrc32c.ko
kernel/net/netfilter/nf_conntrack.ko: kernel/lib/libcrc32c.ko
kernel/lib/libcrc32c.ko:
kernel/crypto/crc32c_generic.ko:
kernel/drivers/net/dummy.ko:
kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko
kernel/net/9p/9pnet.ko:
kernel/net/x/foo-bar.ko.xz:
`

func TestLoadOrderPutsDependenciesFirstOnce(t *testing.T) {
	d, err := parseModulesDep(strings.NewReader(sampleDep))
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.loadOrder([]string{"crc32c_generic", "ip_vs_rr", "ip_vs", "dummy", "9p", "foo_bar"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kernel/crypto/crc32c_generic.ko",
		"kernel/lib/libcrc32c.ko",
		"kernel/net/netfilter/nf_conntrack.ko",
		"kernel/net/netfilter/ipvs/ip_vs.ko",
		"kernel/net/netfilter/ipvs/ip_vs_rr.ko",
		"kernel/drivers/net/dummy.ko",
		"kernel/net/9p/9pnet.ko",
		"kernel/fs/9p/9p.ko",
		"kernel/net/x/foo-bar.ko.xz",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("load order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoadOrderNamesMissingModules(t *testing.T) {
	d, _ := parseModulesDep(strings.NewReader(sampleDep))
	_, err := d.loadOrder([]string{"dummy", "ip_vs_twos", "nope"})
	if err == nil || !strings.Contains(err.Error(), "ip_vs_twos, nope") {
		t.Fatalf("err = %v, want it to name ip_vs_twos and nope", err)
	}
	if _, err := parseModulesDep(strings.NewReader("no colon here\n")); err == nil {
		t.Fatal("a line without a colon parsed")
	}
	cyc, _ := parseModulesDep(strings.NewReader("a.ko: b.ko\nb.ko: a.ko\n"))
	if _, err := cyc.loadOrder([]string{"a"}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("cycle: %v", err)
	}
}
