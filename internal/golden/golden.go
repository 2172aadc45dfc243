// Package golden pins binary encodings in committed files, for the tests
// of the formats that outlive a build (batches, Raft commands, registry
// records): a file holds one "name hex" line per value, every value must
// encode to its line, and every line must decode to its value. A test's
// -update-golden flag rewrites the file, which only a deliberate format
// change should need.
package golden

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update-golden", false, "rewrite the golden files of the encodings instead of checking them")

// Value is one value of a golden file.
type Value struct {
	Name   string
	Value  any
	Encode func() ([]byte, error)
	// Decode decodes a line's bytes; the result must deep-equal Value.
	Decode func([]byte) (any, error)
}

// Check compares vs with the golden file at path (or, with
// -update-golden, writes it).
func Check(t testing.TB, path string, vs []Value) {
	t.Helper()
	var out bytes.Buffer
	for _, v := range vs {
		b, err := v.Encode()
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		fmt.Fprintf(&out, "%s %x\n", v.Name, b)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update-golden writes it)", err)
	}
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	gotLines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(wantLines) != len(vs) {
		t.Fatalf("%s has %d values, the test %d", path, len(wantLines), len(vs))
	}
	for i, v := range vs {
		if gotLines[i] != wantLines[i] {
			t.Errorf("%s encodes differently:\n got %s\nwant %s", v.Name, gotLines[i], wantLines[i])
		}
		name, h, _ := strings.Cut(wantLines[i], " ")
		data, err := hex.DecodeString(h)
		if name != v.Name || err != nil {
			t.Fatalf("%s line %d: %q %v", path, i+1, name, err)
		}
		if got, err := v.Decode(data); err != nil || !reflect.DeepEqual(got, v.Value) {
			t.Errorf("%s decodes to %+v, %v\nwant %+v", v.Name, got, err, v.Value)
		}
	}
}
