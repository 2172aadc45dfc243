package storage

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
	"time"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/registry.golden")

// TestRegistryGolden pins the bytes of registry records, which live in
// databases across upgrades: every record encodes to the committed bytes,
// and the committed bytes decode to the record. `go test ./storage -run
// TestRegistryGolden -update-golden` rewrites the file.
func TestRegistryGolden(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	nodes := []Node{
		{Host: "alpha1-lab", CPUs: 4, Labels: map[string]string{"rack": "r12", "role": "", "zone": "é"}, Registered: at, Updated: at.Add(90 * time.Second)},
		{Host: "h", CPUs: MaxCPUs},
	}
	acks := []EpochAck{
		{Epoch: 3, Host: "alpha1-lab", LastSeq: []uint64{5, 0, 1 << 40, 127, 128}, At: at},
		{Epoch: 1 << 60, Host: "h", Late: true},
	}
	type record struct {
		name   string
		rec    any
		encode func() ([]byte, error)
		decode func([]byte) (any, error)
	}
	var records []record
	for i, n := range nodes {
		records = append(records, record{fmt.Sprintf("node-%d", i), n,
			func() ([]byte, error) { return encodeNode(&n) },
			func(v []byte) (any, error) { return decodeNode(n.Host, v) }})
	}
	for i, a := range acks {
		records = append(records, record{fmt.Sprintf("ack-%d", i), a,
			func() ([]byte, error) { return encodeAck(&a) },
			func(v []byte) (any, error) { return decodeAck(a.Epoch, a.Host, v) }})
	}
	var out bytes.Buffer
	for _, r := range records {
		b, err := r.encode()
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		fmt.Fprintf(&out, "%s %x\n", r.name, b)
	}
	path := filepath.Join("testdata", "registry.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("records encode differently:\n got %s\nwant %s", out.Bytes(), want)
	}
	lines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	if len(lines) != len(records) {
		t.Fatalf("%s has %d records, the test %d", path, len(lines), len(records))
	}
	for i, r := range records {
		name, h, _ := strings.Cut(lines[i], " ")
		v, err := hex.DecodeString(h)
		if name != r.name || err != nil {
			t.Fatalf("%s line %d: %q %v", path, i+1, name, err)
		}
		if got, err := r.decode(v); err != nil || !reflect.DeepEqual(got, r.rec) {
			t.Errorf("%s decodes to %+v, %v\nwant %+v", name, got, err, r.rec)
		}
	}
}
