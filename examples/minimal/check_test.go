package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// -check asks for the schedulers the state's services name, and rr for
// those that name none.
func TestSchedulersInState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	state := `{"Services": {
	  "a/web": {"Scheduler": "sh", "ClusterIPs": ["198.18.100.1"]},
	  "a/db": {"ClusterIPs": ["198.18.100.2"]},
	  "a/api": {"Scheduler": "mh", "ClusterIPs": ["198.18.100.3"]}}}`
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
