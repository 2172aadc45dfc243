package storage

import (
	"dcpi/internal/golden"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

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
	var values []golden.Value
	for i, n := range nodes {
		values = append(values, golden.Value{Name: fmt.Sprintf("node-%d", i), Value: n,
			Encode: func() ([]byte, error) { return encodeNode(&n) },
			Decode: func(v []byte) (any, error) { return decodeNode(n.Host, v) }})
	}
	for i, a := range acks {
		values = append(values, golden.Value{Name: fmt.Sprintf("ack-%d", i), Value: a,
			Encode: func() ([]byte, error) { return encodeAck(&a) },
			Decode: func(v []byte) (any, error) { return decodeAck(a.Epoch, a.Host, v) }})
	}
	golden.Check(t, filepath.Join("testdata", "registry.golden"), values)
}
