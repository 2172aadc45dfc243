package profiledb

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"dcpi/storage"
	"dcpi/wire"
)

// TestReadTotals: dcpi totals sums what is stored and every drop counter,
// prints the drops by name, and says why a selection matched nothing.
func TestReadTotals(t *testing.T) {
	sdb, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	k := wire.MustParseImageKey("buildid:0101")
	for i, host := range []string{"a", "b"} {
		b := &wire.Batch{Version: wire.Version, Host: host, Seq: 1, Epoch: 1, Entries: []wire.Entry{{Image: k, Offset: 0x10, Count: 100 * uint64(i+1)}},
			Unknown: []wire.UnknownEntry{{PID: 1, PC: 0x40, Count: 3}}, Drops: map[string]uint64{"overflow": 5, "crash": uint64(i)}}
		b.Normalize()
		if _, err := sdb.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	db := NewLocal(sdb)
	tot, err := ReadTotals(t.Context(), db, storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if tot.Samples != 300 || tot.Unknown != 6 || tot.Drops["overflow"] != 10 || tot.Drops["crash"] != 1 || tot.Total != 317 || tot.Hint != "" {
		t.Fatalf("totals %+v", tot)
	}
	var text bytes.Buffer
	if err := tot.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := "300 samples stored, 6 unknown, 11 dropped (crash 1, overflow 10); 317 in all\n"; text.String() != want {
		t.Errorf("text %q, want %q", text.String(), want)
	}
	var js bytes.Buffer
	if err := tot.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if want := `{"samples":300,"unknown":6,"drops":{"crash":1,"overflow":10},"total":317}` + "\n"; js.String() != want {
		t.Errorf("JSON %q, want %q", js.String(), want)
	}

	// One host.
	tot, err = ReadTotals(t.Context(), db, storage.Query{Hosts: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if tot.Samples != 100 || tot.Unknown != 3 || tot.Total != 108 {
		t.Errorf("host a: %+v", tot)
	}

	// Nothing selected: zeros, an empty drops object (not null), and the
	// hint after the line.
	tot, err = ReadTotals(t.Context(), db, storage.Query{Hosts: []string{"nosuch"}})
	if err != nil {
		t.Fatal(err)
	}
	const hint = "no samples for host nosuch; hosts in this database: a, b"
	text.Reset()
	js.Reset()
	if err := tot.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := tot.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if want := "0 samples stored, 0 unknown, 0 dropped (no drop counter is nonzero); 0 in all\n" + hint + "\n"; text.String() != want {
		t.Errorf("text %q, want %q", text.String(), want)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back["drops"] == nil || back["total"] != 0.0 {
		t.Errorf("JSON %v: %s", err, js.String())
	}
}
