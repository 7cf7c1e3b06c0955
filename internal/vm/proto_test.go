package vm

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	fw := &frameWriter{w: &buf}
	big := bytes.Repeat([]byte("x"), 70<<10)
	if err := fw.write(frameReady, 0, []byte("6.1.0")); err != nil {
		t.Fatal(err)
	}
	if err := fw.writeChunked(frameStdout, 7, big); err != nil {
		t.Fatal(err)
	}
	if err := fw.write(frameExit, 7, []byte(`{"Code":3}`)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(&buf)
	f, err := readFrame(r)
	if err != nil || f.typ != frameReady || string(f.payload) != "6.1.0" {
		t.Fatalf("first frame = %+v, %v", f, err)
	}
	var out []byte
	frames := 0
	for {
		f, err = readFrame(r)
		if err != nil {
			t.Fatal(err)
		}
		if f.typ == frameExit {
			break
		}
		if f.typ != frameStdout || f.job != 7 {
			t.Fatalf("unexpected frame %v job %d", f.typ, f.job)
		}
		frames++
		out = append(out, f.payload...)
	}
	if !bytes.Equal(out, big) || frames != 3 {
		t.Fatalf("got %d bytes in %d frames, want %d bytes in 3", len(out), frames, len(big))
	}
}

func TestReadFrameRejectsGarbage(t *testing.T) {
	for name, in := range map[string][]byte{
		"bad type":     {0, 0, 0, 0, 1, 0, 0, 0, 0},
		"huge length":  {byte(frameStdout), 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff},
		"short header": {byte(frameStdout), 0, 0},
		"short body":   {byte(frameStdout), 0, 0, 0, 1, 0, 0, 0, 5, 'a'},
	} {
		if _, err := readFrame(bufio.NewReader(bytes.NewReader(in))); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	fw := &frameWriter{w: &bytes.Buffer{}}
	if err := fw.write(frameStdout, 1, make([]byte, maxPayload+1)); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("oversized write: %v", err)
	}
}
