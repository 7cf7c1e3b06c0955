package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
)

// -check asks for the schedulers the state's services name, and rr for
// those that name none.
func TestSchedulersInState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	state := `{"services": {
	  "a/web": {"scheduler": "sh", "clusterIPs": ["198.18.100.1"]},
	  "a/db": {"clusterIPs": ["198.18.100.2"]},
	  "a/api": {"scheduler": "mh", "clusterIPs": ["198.18.100.3"]}}}`
	if err := os.WriteFile(path, []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := schedulersIn(path)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"mh", "rr", "sh"}; !slices.Equal(got, want) {
		t.Errorf("schedulers %q, want %q", got, want)
	}
	if _, err := schedulersIn(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("a missing state file: no error")
	}
}

// The state is read in its text form, YAML as well as JSON, and a problem
// names the file and the field.
func TestSchedulersInYAMLState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.yaml")
	state := "services:\n  a/web: {scheduler: wrr, clusterIPs: [198.18.100.1]}\n"
	if err := os.WriteFile(path, []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := schedulersIn(path); err != nil || !slices.Equal(got, []string{"wrr"}) {
		t.Errorf("schedulers %q, %v; want [wrr]", got, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("services:\n  a/web: {Scheduler: sh}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := schedulersIn(bad)
	var ve *proxier.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), bad+": ") || !strings.Contains(err.Error(), `services["a/web"].Scheduler: is not a field of a service (did you mean scheduler?)`) {
		t.Errorf("a field in Go's case: %v", err)
	}
}
