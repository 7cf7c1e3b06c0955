package testutil

import "testing"

func TestRepeatsAService(t *testing.T) {
	for _, tc := range []struct {
		save string
		want bool
	}{
		{"", false},
		{"-A -t 198.18.0.1:80 -s rr\n-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m -w 1\n-A -t 198.18.0.2:80 -s rr\n", false},
		{"-A -t 198.18.0.1:80 -s rr\n-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m -w 1\n-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m -w 1\n", false},
		{"-A -t 198.18.0.1:80 -s rr\n-A -t 198.18.0.2:80 -s rr\n-A -t 198.18.0.2:80 -s rr\n", true},
	} {
		if got := repeatsAService(tc.save); got != tc.want {
			t.Errorf("repeatsAService(%q) = %v, want %v", tc.save, got, tc.want)
		}
	}
}
