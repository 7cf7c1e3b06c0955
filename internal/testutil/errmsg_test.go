package testutil

import "testing"

func TestRepeatedPrefix(t *testing.T) {
	for msg, want := range map[string]string{
		"proxier: ipvs: ipvs: batch: 1 of 2 requests failed": "ipvs",
		"proxier: ipvs: batch: 1 of 2 requests failed":       "",
		"ipvs: add service tcp 198.18.0.1:80: ipvs: x":       "",
		"a: b: b: c":        "b",
		"sysctl: sysctl: x": "sysctl",
		"no prefix at all":  "",
	} {
		if got := RepeatedPrefix(msg); got != want {
			t.Errorf("RepeatedPrefix(%q) = %q, want %q", msg, got, want)
		}
	}
}
