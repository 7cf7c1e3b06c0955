package proxier

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeState holds the text form to its promises: decoding never
// panics, and whatever decodes is written, as JSON and as YAML, in a form
// that decodes to the same State. The seeds are the example files and a
// few inputs of each syntax.
func FuzzDecodeState(f *testing.F) {
	files, err := os.ReadDir(statesDir)
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(statesDir, file.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		`{"services": {"a": {"ports": [{"port": 1}], "sessionAffinity": {"timeout": 1.5}, "endpoints": [{"addr": "2001:db8:1::1%eth0", "ports": {"x": 2}}]}}}`,
		"services:\n  a: &a {ports: [{port: 0x10, protocol: udp}], schedulerFlags: [flag-2]}\n  b: *a\n",
		"services: {\"\": {scheduler: MH, schedulerFlags: [flag-1]}}\nnode: {addresses: ['2001:db8::a']}\n",
		`{"services": {"w": {"endpoints": [{"addr": "198.18.1.1", "weight": 1}, {"addr": "198.18.1.2", "weight": 0, "upperThreshold": 9}, {"addr": "198.18.1.3", "weight": -4, "lowerThreshold": 2}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeState(data)
		if err != nil {
			return
		}
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("a decoded State does not encode as JSON: %v", err)
		}
		ys, err := EncodeStateYAML(s)
		if err != nil {
			t.Fatalf("a decoded State does not encode as YAML: %v", err)
		}
		for _, text := range [][]byte{js, ys} {
			again, err := DecodeState(text)
			if err != nil {
				t.Fatalf("a decoded State, written, does not decode: %v\n%s\nfrom\n%q", err, text, data)
			}
			if !reflect.DeepEqual(again, s) {
				t.Fatalf("a decoded State, written, decodes differently:\n%s\n got %+v\nwant %+v\nfrom\n%q", text, again, s, data)
			}
		}
	})
}
