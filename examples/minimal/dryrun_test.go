package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.plan from the dry runs")

const statesDir = "../states"

// stateFiles are the files of examples/states.
func stateFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(statesDir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no state files in %s: %v", statesDir, err)
	}
	return files
}

// checkPlan holds a dry run's output to testdata/<file>.plan: the IPVS and
// VIP sections exactly, and a netfilter section that renders the table of
// the default instance with each virtual server's VIP in it.
func checkPlan(t *testing.T, file string, out []byte) {
	t.Helper()
	text := string(out)
	nft, rest, ok := strings.Cut(text, "# ipvs: add and update (ipvsadm -R)\n")
	if !ok {
		t.Fatalf("%s: no IPVS section in the plan:\n%s", file, text)
	}
	if !strings.HasPrefix(nft, "# netfilter IPv") || !strings.Contains(nft, "table ip") {
		t.Errorf("%s: the plan does not start with a netfilter table:\n%s", file, nft)
	}
	for _, line := range strings.Split(rest, "\n") {
		if vip, ok := strings.CutPrefix(line, "ip addr add "); ok {
			vip, _, _ = strings.Cut(vip, "/")
			if !strings.Contains(nft, vip) {
				t.Errorf("%s: VIP %s is bound but not in the netfilter rules", file, vip)
			}
		}
	}
	golden := filepath.Join("testdata", filepath.Base(file)+".plan")
	if *update {
		if err := os.WriteFile(golden, []byte(rest), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestDryRun -update writes it)", err)
	}
	if !bytes.Equal([]byte(rest), want) {
		t.Errorf("%s: the plan's IPVS and VIP sections differ from %s (-update rewrites it)\ngot:\n%s\nwant:\n%s", file, golden, rest, want)
	}
}

// dualStack says which example needs -dual-stack.
func dualStack(file string) bool { return filepath.Base(file) == "dualstack.yaml" }

// -dry-run prints the plan of every example State over the fakes, in this
// process: no kernel is asked anything.
func TestDryRunEveryState(t *testing.T) {
	for _, file := range stateFiles(t) {
		var out bytes.Buffer
		if err := dryRun(context.Background(), &out, configFor(dualStack(file)), file, ""); err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		checkPlan(t, file, out.Bytes())
	}
}

// A State that does not validate is refused with its problems and the
// file's name, and no plan.
func TestDryRunInvalidState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	state := "services:\n  web:\n    clusterIPs: [198.18.100.1]\n    ports: [{port: 70000}]\n"
	if err := os.WriteFile(path, []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := dryRun(context.Background(), &out, nil, path, "")
	if err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), `services["web"].ports[0].port: 70000 out of range`) {
		t.Errorf("an invalid state: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("a plan printed for an invalid state:\n%s", out.String())
	}
}

// -node plans from an IPVS table ipvsadm -Sn saved: another program's
// virtual server stays out of the plan, and one at a VIP:port of the State
// is a conflict.
func TestDryRunFromNode(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, []byte("-A -t 198.18.200.1:443 -s wlc\n-a -t 198.18.200.1:443 -r 198.18.2.1:443 -g -w 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(statesDir, "clusterip.yaml")
	var out bytes.Buffer
	if err := dryRun(context.Background(), &out, nil, state, other); err != nil {
		t.Fatalf("from a node with another program's virtual server: %v", err)
	}
	if strings.Contains(out.String(), "198.18.200.1") {
		t.Errorf("the plan touches another program's virtual server:\n%s", out.String())
	}
	checkPlan(t, state, out.Bytes())

	clash := filepath.Join(dir, "clash.txt")
	if err := os.WriteFile(clash, []byte("-A -t 198.18.100.1:80 -s rr\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := dryRun(context.Background(), &out, nil, state, clash); err == nil {
		t.Errorf("a State's VIP:port held by another program: no error, plan:\n%s", out.String())
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("-A -t nowhere -s rr\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := dryRun(context.Background(), &out, nil, state, bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("an unreadable IPVS table: %v", err)
	}
}
