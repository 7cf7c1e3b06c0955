package testutil

import "regexp"

var prefixWord = regexp.MustCompile(`\b(\w+): `)

// RepeatedPrefix returns the first word that msg says twice in a row as a
// prefix ("ipvs: ipvs: batch" gives "ipvs"), or "". It is the check
// `\b(\w+): \1:` would be, which Go's regexp cannot express
// (no back-references).
func RepeatedPrefix(msg string) string {
	m := prefixWord.FindAllStringSubmatchIndex(msg, -1)
	for i := 1; i < len(m); i++ {
		prev, cur := m[i-1], m[i]
		if prev[1] == cur[0] && msg[prev[2]:prev[3]] == msg[cur[2]:cur[3]] {
			return msg[cur[2]:cur[3]]
		}
	}
	return ""
}
