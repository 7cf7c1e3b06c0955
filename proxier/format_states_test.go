package proxier

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// statesDir holds an example State file per kind of service.
const statesDir = "../examples/states"

// The example files decode, and a dual-stack Proxier over the fakes
// serves each: the documentation's examples stay valid, and each makes the
// virtual server it is there to show.
func TestExampleStates(t *testing.T) {
	shows := map[string]string{ // a line of the IPVS table each example makes
		"clusterip.yaml":     "-A -t 198.18.100.1:80 -s rr",
		"nodeport.json":      "-A -u 198.18.0.10:30053 -s rr",
		"loadbalancer.yaml":  "-A -t 198.18.103.1:443 -s rr",
		"externalip.yaml":    "-A -t 198.18.102.1:8080 -s rr",
		"no-cluster-ip.yaml": "-A -t 198.18.0.10:30080 -s rr",
		"affinity-sh.yaml":   "-A -u 198.18.100.50:7777 -s sh -p 1800 -b sh-fallback,sh-port",
		"dualstack.yaml":     "-A -t [2001:db8:100::60]:80 -s rr",
		"fwmark.yaml":        "-A -f 7 -s rr -p 600 -M 255.255.255.0",
		"weighted.yaml":      "-a -t 198.18.100.70:80 -r 198.18.1.73:8080 -m -w 3 -x 1000 -y 800",
		"direct-route.yaml":  "-a -t 198.18.102.10:443 -r 198.18.0.22:443 -g -w 1",
	}
	lacks := map[string]string{ // a line an example must not make
		"dualstack.yaml": "-A -t 198.18.0.10:30061 ", // an IPv6-only service's node port
	}
	files, err := os.ReadDir(statesDir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		t.Run(f.Name(), func(t *testing.T) {
			want, ok := shows[f.Name()]
			if !ok {
				t.Fatalf("no line of the IPVS table is expected of %s: add one here", f.Name())
			}
			seen++
			data, err := os.ReadFile(filepath.Join(statesDir, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			s, err := DecodeState(data)
			if err != nil {
				t.Fatal(err)
			}
			n := newFakeNode(t)
			if _, err := n.p.Sync(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if dump := n.ipvs.Dump(); !strings.Contains(dump, want+"\n") {
				t.Errorf("the IPVS table has no %q:\n%s", want, dump)
			}
			if l, ok := lacks[f.Name()]; ok && strings.Contains(n.ipvs.Dump(), l) {
				t.Errorf("the IPVS table has %q:\n%s", l, n.ipvs.Dump())
			}
		})
	}
	if seen != len(shows) {
		t.Errorf("%d of the %d example files are in %s", seen, len(shows), statesDir)
	}
}
