package statefile

import "strings"

// forwardWords are the forwarding methods' words (docs/state-format.md),
// each with keepalived's lb_kind word for it, which is read too.
var forwardWords = [][2]string{{"masquerade", "NAT"}, {"direct-route", "DR"}, {"tunnel", "TUN"}}

// forward reads a service's forwarding method, its word or keepalived's
// in any case, and gives its word; absent is "", which means masquerade.
func (d *stateDecoder) forward(path string, v *textValue) string {
	s := d.str(path, v)
	if v == nil || v.kind != textString {
		return ""
	}
	for _, w := range forwardWords {
		if strings.EqualFold(s, w[0]) || strings.EqualFold(s, w[1]) {
			return w[0]
		}
	}
	d.add(path, v.line, v.shown(), "is not masquerade, direct-route or tunnel (or keepalived's NAT, DR, TUN)")
	return ""
}

// tunnel reads a service's tunnel: its type (ipip when absent), GUE's
// port, its checksum option; words in any case, given in lower case.
func (d *stateDecoder) tunnel(path string, v *textValue) *Tunnel {
	f := d.fields(path, v, "a tunnel", tunnelFields)
	return &Tunnel{
		Type:     d.word(path+".type", f["type"], "ipip", "ipip", "gue", "gre"),
		Port:     d.integer(path+".port", f["port"]),
		Checksum: d.word(path+".checksum", f["checksum"], "", "none", "csum", "remcsum"),
	}
}

// word reads one of words in any case and gives it in lower case; absent
// is def.
func (d *stateDecoder) word(path string, v *textValue, def string, words ...string) string {
	s := d.str(path, v)
	if v == nil || v.kind != textString {
		return def
	}
	for _, w := range words {
		if strings.EqualFold(s, w) {
			return w
		}
	}
	d.add(path, v.line, v.shown(), "is not %s or %s", strings.Join(words[:len(words)-1], ", "), words[len(words)-1])
	return def
}
