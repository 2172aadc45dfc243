package wire_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dcpi/internal/golden"
	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// goldenValues is written out by hand so its bytes change only with the
// format.
func goldenValues() *wire.ValuesRecord {
	sha := wire.MustParseImageKey("sha256:" + strings.Repeat("a5", 32))
	bid := wire.MustParseImageKey("buildid:0102030405060708090a0b0c0d0e0f1011121314")
	return &wire.ValuesRecord{Version: 1, Host: "alpha3", Epoch: 2, Seq: 7, Module: "loadlat",
		Stats: wire.ValueStats{Interrupts: 100, NoContext: 10, Completed: 80,
			GaveUp: map[string]uint64{"pal": 6, "fault": 4}, Steps: 1200, Values: 300, TableFull: 1, Unattributed: 2},
		Lists: []wire.ValueList{
			{Image: sha, Offset: 0x40, Kind: 1, List: hotlist.List{N: 20, Entries: []hotlist.Entry{{Value: 2, Count: 15}, {Value: 90, Count: 5}}}},
			{Image: bid, Offset: 0x10, Kind: 1, List: hotlist.List{Shift: 2, N: 1 << 20, Entries: []hotlist.Entry{{Value: 8, Count: 1000}}}},
		}}
}

func TestValuesGolden(t *testing.T) {
	golden.Check(t, filepath.Join("testdata", "values.golden"), []golden.Value{{
		Name: "values-v1", Value: goldenValues(), Encode: goldenValues().MarshalBinary,
		Decode: func(data []byte) (any, error) { var r wire.ValuesRecord; return &r, r.UnmarshalBinary(data) },
	}})
}

// reseal rewrites a message's CRC-32C trailer after a change, so a test
// reaches the check it aims at.
func reseal(b []byte) []byte {
	n := len(b) - 4
	binary.BigEndian.PutUint32(b[n:], crc32.Checksum(b[:n], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestValuesWrongVersion checks that a record of another version is
// refused with ErrVersion, naming the version.
func TestValuesWrongVersion(t *testing.T) {
	data, err := goldenValues().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint16(data[4:6], 2)
	var r wire.ValuesRecord
	err = r.UnmarshalBinary(reseal(data))
	if !errors.Is(err, wire.ErrVersion) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("version 2 record: %v, want ErrVersion naming version 2", err)
	}
	bad := goldenValues()
	bad.Version = 3
	if _, err := bad.MarshalBinary(); !errors.Is(err, wire.ErrVersion) {
		t.Fatalf("encoding version 3: %v", err)
	}
}

func TestValuesRejectsInvalid(t *testing.T) {
	for name, mod := range map[string]func(r *wire.ValuesRecord){
		"unconserved": func(r *wire.ValuesRecord) { r.Stats.Interrupts++ },
		"unsorted":    func(r *wire.ValuesRecord) { r.Lists[0], r.Lists[1] = r.Lists[1], r.Lists[0] },
		"kind 0":      func(r *wire.ValuesRecord) { r.Lists[0].Kind = 0 },
		"bad list":    func(r *wire.ValuesRecord) { r.Lists[0].List.Entries[0].Count = 0 },
		"no host":     func(r *wire.ValuesRecord) { r.Host = "" },
		"no seq":      func(r *wire.ValuesRecord) { r.Seq = 0 },
	} {
		r := goldenValues()
		mod(r)
		if _, err := r.MarshalBinary(); !errors.Is(err, wire.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func FuzzValuesRecord(f *testing.F) {
	data, _ := goldenValues().MarshalBinary()
	f.Add(data)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r wire.ValuesRecord
		if err := r.UnmarshalBinary(b); err != nil {
			return
		}
		again, err := r.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded record does not encode: %v", err)
		}
		var r2 wire.ValuesRecord
		if err := r2.UnmarshalBinary(again); err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
