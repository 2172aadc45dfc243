package storage

import (
	"errors"
	"maps"
	"testing"

	"dcpi/wire"
)

// TestProfileQueries: a small fixed database and the rows each query gives.
func TestProfileQueries(t *testing.T) {
	db, _ := openTest(t)
	E := func(img int, ev uint8, off uint64, pid uint32, n uint64) wire.Entry {
		return wire.Entry{Image: key(img), Event: ev, Offset: off, PID: pid, Count: n}
	}
	for _, b := range []*wire.Batch{
		batch("a", 0, 1, 1, []wire.Entry{E(0, 0, 0, 0, 1), E(0, 0, 0, 7, 2), E(0, 1, 4, 0, 3), E(1, 0, 8, 0, 4)}, nil, nil),
		batch("ab", 0, 1, 1, []wire.Entry{E(0, 0, 0, 0, 10), E(2, 0, 0, 0, 20)}, nil, nil),
		batch("a", 0, 2, 2, []wire.Entry{E(0, 0, 0, 0, 100), E(0, 255, 0, 0, 5)}, []wire.UnknownEntry{{PID: 3, PC: 8, Event: 0, Count: 6}}, map[string]uint64{"d": 1}),
	} {
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	type P = profKey
	for _, tc := range []struct {
		name string
		q    Query
		want map[profKey]uint64
	}{
		{"fleet", Query{}, map[P]uint64{
			{key(0), 0, 0, ""}: 113, {key(0), 4, 1, ""}: 3, {key(1), 8, 0, ""}: 4, {key(2), 0, 0, ""}: 20, {key(0), 0, 255, ""}: 5}},
		{"epoch 1", Query{Epochs: []uint64{1}}, map[P]uint64{
			{key(0), 0, 0, ""}: 13, {key(0), 4, 1, ""}: 3, {key(1), 8, 0, ""}: 4, {key(2), 0, 0, ""}: 20}},
		{"per host", Query{Hosts: []string{"a", "ab"}, Events: []uint8{0}}, map[P]uint64{
			{key(0), 0, 0, "a"}: 103, {key(0), 0, 0, "ab"}: 10, {key(1), 8, 0, "a"}: 4, {key(2), 0, 0, "ab"}: 20}},
		{"host a only", Query{Hosts: []string{"a"}, Images: []wire.ImageKey{key(0)}}, map[P]uint64{
			{key(0), 0, 0, "a"}: 103, {key(0), 4, 1, "a"}: 3, {key(0), 0, 255, "a"}: 5}},
		{"event 255", Query{Events: []uint8{255}}, map[P]uint64{{key(0), 0, 255, ""}: 5}},
		{"images skip", Query{Images: []wire.ImageKey{key(2), key(1)}}, map[P]uint64{{key(1), 8, 0, ""}: 4, {key(2), 0, 0, ""}: 20}},
		{"pid 7", Query{PIDs: []uint32{7}}, map[P]uint64{{key(0), 0, 0, ""}: 2}},
		{"missing epoch", Query{Epochs: []uint64{9}}, map[P]uint64{}},
		{"no events", Query{Events: []uint8{}}, map[P]uint64{}},
	} {
		if got := readProfile(t, db, tc.q); !maps.Equal(got, tc.want) {
			t.Errorf("%s: got %v\nwant %v", tc.name, got, tc.want)
		}
	}

	for _, tc := range []struct {
		name       string
		q          Query
		s, u, drop uint64
	}{
		{"all", Query{}, 145, 6, 1},
		{"epoch 1", Query{Epochs: []uint64{1}}, 40, 0, 0},
		{"host ab", Query{Hosts: []string{"ab"}}, 30, 0, 0},
		{"event 0", Query{Events: []uint8{0}}, 137, 6, 1},
		{"no events", Query{Events: []uint8{}}, 0, 0, 1},
		{"image 0", Query{Images: []wire.ImageKey{key(0)}}, 121, 0, 1},
		{"pid 3", Query{PIDs: []uint32{3}}, 0, 6, 1},
	} {
		s, u, d, err := db.Totals(tc.q)
		if err != nil || s != tc.s || u != tc.u || d["d"] != tc.drop {
			t.Errorf("Totals %s = %d %d %v %v; want %d %d %d", tc.name, s, u, d, err, tc.s, tc.u, tc.drop)
		}
	}

	var us []UnknownRecord
	if err := db.Unknown(Query{}, func(r UnknownRecord) error { us = append(us, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(us) != 1 || us[0] != (UnknownRecord{Epoch: 2, Event: 0, Host: "a", PID: 3, PC: 8, Count: 6}) {
		t.Errorf("Unknown = %+v", us)
	}

	stop := errors.New("stop")
	n := 0
	err := db.Profile(t.Context(), Query{}, func(wire.ImageKey, uint64, uint8, string, uint64) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("callback error: %v after %d rows", err, n)
	}
}
