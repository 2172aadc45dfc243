package storage

import (
	"dcpi/internal/golden"
	"encoding/hex"
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
		{Host: "alpha1-lab", CPUs: 4, Labels: map[string]string{"rack": "r12"}, Registered: at, Updated: at,
			Periods: map[uint8]uint64{0: 63488, 1: 16384, 2: 16384, 255: 1 << 40}},
	}
	// Version 1 records (before periods), as databases written by
	// earlier builds hold them: they must still decode, to nodes with no
	// periods. Nothing writes them any more.
	v1 := []struct {
		hex  string
		node Node
	}{
		{"010418998b01859eb60818998b167a09ba0803047261636b0372313204726f6c6500047a6f6e6502c3a9", nodes[0]},
		{"01ffff030000000000000000000000000000000000", nodes[1]},
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
	for i, r := range v1 {
		b, err := hex.DecodeString(r.hex)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, golden.Value{Name: fmt.Sprintf("node-v1-%d", i), Value: r.node,
			Encode: func() ([]byte, error) { return b, nil },
			Decode: func(v []byte) (any, error) { return decodeNode(r.node.Host, v) }})
	}
	for i, a := range acks {
		values = append(values, golden.Value{Name: fmt.Sprintf("ack-%d", i), Value: a,
			Encode: func() ([]byte, error) { return encodeAck(&a) },
			Decode: func(v []byte) (any, error) { return decodeAck(a.Epoch, a.Host, v) }})
	}
	// Epoch records: version 1 (every epoch but a merged one, as builds
	// from before retention wrote them) and version 2 (a merged epoch).
	epochs := []Epoch{
		{Number: 1, Start: at, State: EpochOpen},
		{Number: 7, Start: at, End: at.Add(time.Hour), State: EpochSealed},
		{Number: 7, Start: at, End: at.Add(24 * time.Hour), State: EpochSealed, MergedThrough: 30},
	}
	for i, e := range epochs {
		values = append(values, golden.Value{Name: fmt.Sprintf("epoch-%d", i), Value: e,
			Encode: func() ([]byte, error) { return encodeEpoch(&e) },
			Decode: func(v []byte) (any, error) { return decodeEpoch(e.Number, v) }})
	}
	golden.Check(t, filepath.Join("testdata", "registry.golden"), values)
}
