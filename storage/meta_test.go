package storage

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"dcpi/wire"
)

func TestImages(t *testing.T) {
	db, _ := openTest(t)
	rec := &wire.ImageRecord{Version: wire.Version, Key: key(3), Path: "/usr/bin/sort", Size: 1 << 20, TextStart: 0x120000000, TextEnd: 0x120010000,
		Symbols: []wire.Symbol{{Name: "main", Addr: 0x120000100, Size: 0x40}}}
	if _, err := db.Image(t.Context(), rec.Key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing image: %v", err)
	}
	if err := db.PutImage(rec); err != nil {
		t.Fatal(err)
	}
	got, err := db.Image(t.Context(), rec.Key)
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("Image = %+v, %v", got, err)
	}
	// The same content found at another path replaces the record.
	rec2 := *rec
	rec2.Path = "/opt/sort"
	if err := db.PutImage(&rec2); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Image(t.Context(), rec.Key); got.Path != "/opt/sort" {
		t.Errorf("path %q after replace", got.Path)
	}
	bad := *rec
	bad.TextEnd = 0
	if err := db.PutImage(&bad); !errors.Is(err, wire.ErrInvalid) {
		t.Errorf("PutImage(invalid) = %v", err)
	}
}

func TestEpochs(t *testing.T) {
	db, _ := openTest(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	eps := []Epoch{
		{Number: 2, Start: t0, End: t0.Add(time.Minute), State: EpochSealed},
		{Number: 1, Start: t0.Add(-time.Hour), End: t0, State: EpochClosing},
		{Number: 3, Start: t0.Add(time.Minute), State: EpochOpen},
		{Number: 1 << 63, State: EpochOpen},
	}
	for _, e := range eps {
		if err := db.PutEpoch(e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	want := []Epoch{eps[1], eps[0], eps[2], eps[3]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Epochs =\n%+v\nwant\n%+v", got, want)
	}
	if e, err := db.Epoch(2); err != nil || !reflect.DeepEqual(e, eps[0]) {
		t.Errorf("Epoch(2) = %+v %v", e, err)
	}
	if _, err := db.Epoch(9); !errors.Is(err, ErrNotFound) {
		t.Errorf("Epoch(9): %v", err)
	}
	for _, bad := range []Epoch{
		{Number: 5},
		{Number: 5, State: 9},
		{Number: 5, State: EpochOpen, Start: t0, End: t0.Add(-1)},
		{Number: 5, State: EpochOpen, Start: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
	} {
		if err := db.PutEpoch(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutEpoch(%+v) = %v", bad, err)
		}
	}
}

// TestCorruptValues: values that do not decode are errors naming the
// problem, never panics or wrong counts.
func TestCorruptValues(t *testing.T) {
	ent := []wire.Entry{{Image: key(0), Offset: 8, Count: 2}}
	for _, tc := range []struct {
		name  string
		key   func() []byte
		value []byte
		merge bool // merge rather than set the bad value
		read  func(db *DB) error
	}{
		{"short counter", func() []byte { return countsKey(nil, 0, &ent[0], "h") }, []byte{1, 2, 3}, false,
			func(db *DB) error { return db.Records(Query{}, func(Record) error { return nil }) }},
		{"short merge operand", func() []byte { return fleetKey(nil, 0, &ent[0]) }, []byte{1}, true,
			func(db *DB) error {
				return db.Profile(t.Context(), Query{}, func(wire.ImageKey, uint64, uint8, string, uint64) error { return nil })
			}},
		{"bad counts key", func() []byte { return []byte{tCounts, 0, 0, 0, 0, 0, 0, 0, 0, 1} }, make([]byte, 8), false,
			func(db *DB) error { return db.Records(Query{}, func(Record) error { return nil }) }},
		{"bad hosts key", func() []byte { return append(hostsPrefix(0, "g"), 0, 1, 2) }, make([]byte, 8), false,
			func(db *DB) error { return db.Records(Query{Hosts: []string{"g"}}, func(Record) error { return nil }) }},
		{"short hosts counter", func() []byte { return hostsKey(nil, 0, "g", &ent[0]) }, []byte{1}, true,
			func(db *DB) error {
				return db.Profile(t.Context(), Query{Hosts: []string{"g"}}, func(wire.ImageKey, uint64, uint8, string, uint64) error { return nil })
			}},
		{"summary counter", func() []byte { return summaryKey(0, 0, "h", classKnow) }, []byte{9}, false,
			func(db *DB) error { _, _, _, err := db.Totals(Query{}); return err }},
		{"summary class", func() []byte { return summaryKey(0, 0, "h", 'x') }, make([]byte, 8), false,
			func(db *DB) error { _, _, _, err := db.Totals(Query{}); return err }},
		{"drop name", func() []byte { return dropKey(0, "h", "bad name") }, make([]byte, 8), false,
			func(db *DB) error { _, _, _, err := db.Totals(Query{}); return err }},
		{"unknown key", func() []byte { return []byte{tUnknown, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'h', 0, 1} }, make([]byte, 8), false,
			func(db *DB) error { return db.Unknown(Query{}, func(UnknownRecord) error { return nil }) }},
		{"applied seq", func() []byte { return appliedKey("h", 0) }, []byte{1}, false,
			func(db *DB) error { _, err := db.ApplyBatch(batch("h", 0, 1, 0, ent, nil, nil)); return err }},
		{"image record", func() []byte { return imageKey(key(0)) }, []byte("DCPR garbage"), false,
			func(db *DB) error { _, err := db.Image(t.Context(), key(0)); return err }},
		{"epoch record", func() []byte { return epochKey(4) }, []byte{1, 7, 0}, false,
			func(db *DB) error { _, err := db.Epochs(); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openTest(t)
			if _, err := db.ApplyBatch(batch("g", 0, 1, 0, ent, []wire.UnknownEntry{{PID: 1, Count: 1}}, map[string]uint64{"x": 1})); err != nil {
				t.Fatal(err)
			}
			write := db.pdb.Set
			if tc.merge {
				write = db.pdb.Merge
			}
			if err := write(tc.key(), tc.value, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			err := tc.read(db)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read: %v, want ErrCorrupt", err)
			}
			t.Log(err)
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	if _, err := Open(dir, Options{ReadOnly: true}); err == nil {
		t.Error("read-only open of a missing database succeeded")
	}
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Set(schemaKey, []byte("dcpi-profile-db/99"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "dcpi-profile-db/99") {
		t.Errorf("open with a future schema: %v", err)
	}

	// A Pebble database made with another merger is refused by Pebble.
	other := filepath.Join(t.TempDir(), "other")
	pdb, err := pebble.Open(other, &pebble.Options{Logger: pebbleLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Close()
	if _, err := Open(other, Options{}); err == nil {
		t.Error("opened a database made with another merger")
	}

	// Read-only: reads work, writes say why they fail.
	dir2 := filepath.Join(t.TempDir(), "db2")
	db2, err := Open(dir2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db2.Close()
	ro, err := Open(dir2, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.ApplyBatch(batch("h", 0, 1, 0, nil, nil, nil)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("apply on read-only: %v", err)
	}
	if err := ro.PutEpoch(Epoch{Number: 1, State: EpochOpen}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("put epoch on read-only: %v", err)
	}
	if _, _, _, err := ro.Totals(Query{}); err != nil {
		t.Errorf("totals on read-only: %v", err)
	}
}
