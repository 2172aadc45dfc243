package cluster

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dcpi/coordinator"
)

// FuzzParseFleetRecord feeds the demo directory's fleet record
// (DIR/demo.json, which a later dcpi demo --dir DIR continues) arbitrary
// bytes: it returns the replicas or an error, never panics; each replica
// it returns is a plain name (its database goes in DIR/ID, never outside
// DIR nor DIR itself) at a loopback address; and the record
// newFleetDir would write of them reads back the same.
func FuzzParseFleetRecord(f *testing.F) {
	for _, peers := range [][]coordinator.Peer{
		{{ID: "c1", Addr: "127.0.0.1:40001"}},
		{{ID: "c1", Addr: "127.0.0.1:40001"}, {ID: "c2", Addr: "127.0.0.1:40002"}, {ID: "c3", Addr: "[::1]:40003"}},
		{{ID: "../escape", Addr: "127.0.0.1:40001"}},
		{{ID: "", Addr: "127.0.0.1:40001"}},
		{{ID: "c1", Addr: "0.0.0.0:40001"}},
		{{ID: "c1", Addr: "example.com:40001"}},
		{{ID: "c1", Addr: "127.0.0.1:1"}, {ID: "c1", Addr: "127.0.0.1:2"}},
	} {
		b, err := json.MarshalIndent(fleetRecord{Replicas: peers}, "", "  ")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"replicas":[]}`))
	f.Add([]byte(`{"replicas":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		peers, err := parseFleetRecord(b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		dir := filepath.Join("run", "demo")
		for _, p := range peers {
			d := filepath.Join(dir, p.ID)
			if filepath.Dir(d) != dir || filepath.Base(d) != p.ID {
				t.Fatalf("replica %q's directory %s is not one inside %s", p.ID, d, dir)
			}
		}
		again, err := json.MarshalIndent(fleetRecord{Replicas: peers}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseFleetRecord(again)
		if err != nil || !reflect.DeepEqual(back, peers) {
			t.Fatalf("replicas %+v written and read back as %+v, %v", peers, back, err)
		}
	})
}
