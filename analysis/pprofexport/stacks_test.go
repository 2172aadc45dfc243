package pprofexport

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/storage"
	"dcpi/wire"
)

// stackFixture is fixture() with call stacks of cycles:
//
//	memcpy ← work ← main        120 (alpha, epoch 1)
//	memcpy ← helper ← main       60 (beta, epoch 2)
//	work ← main                 200 (alpha, epoch 1): main's last instruction calls work,
//	                                 so the return address is work's first
//	work, truncated              30 (beta, epoch 1)
//	[raw pc] ← main              10 (alpha, epoch 1)
func stackFixture() *analysis.MemSource {
	m := fixture()
	app, libc := testKey(1), testKey(2)
	f := func(img wire.ImageKey, off uint64) wire.Frame { return wire.Frame{Image: img, Offset: off} }
	m.AddStack(1, evCycles, "alpha", 0, false, []wire.Frame{f(libc, 0x220), f(app, 0x274), f(app, 0x238)}, 120)
	m.AddStack(2, evCycles, "beta", 0, false, []wire.Frame{f(libc, 0x224), f(app, 0x308), f(app, 0x240)}, 60)
	m.AddStack(1, evCycles, "alpha", 0, false, []wire.Frame{f(app, 0x264), f(app, 0x260)}, 200)
	m.AddStack(1, evCycles, "beta", 7, true, []wire.Frame{f(app, 0x268)}, 30)
	m.AddStack(1, evCycles, "alpha", 0, false, []wire.Frame{{Offset: 0x9000}, f(app, 0x244)}, 10)
	m.AddStack(1, evIMiss, "alpha", 0, false, []wire.Frame{f(app, 0x264), f(app, 0x238)}, 30)
	return m
}

// sampleFuncs names a pprof sample's frames, leaf first.
func sampleFuncs(s *profile.Sample) string {
	var names []string
	for _, l := range s.Location {
		names = append(names, l.Line[len(l.Line)-1].Function.Name)
	}
	return strings.Join(names, "<")
}

func TestPprofStacks(t *testing.T) {
	src := stackFixture()
	for _, tc := range []struct {
		name string
		q    PprofQuery
		want map[string]int64 // cycles by stack
	}{
		{"fleet", PprofQuery{Events: []uint8{evCycles}}, map[string]int64{
			"memcpy<work<main": 120, "memcpy<helper<main": 60, "work<main": 200, "work<[truncated]": 30, "unknown_rtn<main": 10}},
		{"one host", PprofQuery{Events: []uint8{evCycles}, Filter: storage.Query{Hosts: []string{"beta"}}}, map[string]int64{
			"memcpy<helper<main": 60, "work<[truncated]": 30}},
		{"by host", PprofQuery{Events: []uint8{evCycles}, Filter: storage.Query{Hosts: []string{"alpha", "beta"}}, ByHost: true}, map[string]int64{
			"memcpy<work<main": 120, "memcpy<helper<main": 60, "work<main": 200, "work<[truncated]": 30, "unknown_rtn<main": 10}},
		{"leaf image", PprofQuery{Events: []uint8{evCycles}, ImagePaths: []string{"libc"}}, map[string]int64{
			"memcpy<work<main": 120, "memcpy<helper<main": 60}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Pprof(t.Context(), src, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := p.Write(&buf); err != nil {
				t.Fatal(err)
			}
			back, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if err := back.CheckValid(); err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, s := range back.Sample {
				got[sampleFuncs(s)] += s.Value[0]
				if tc.q.ByHost && len(s.Label["host"]) != 1 {
					t.Errorf("sample %s without its host", sampleFuncs(s))
				}
			}
			if !mapsEqual(got, tc.want) {
				t.Fatalf("samples by stack %v\nwant %v", got, tc.want)
			}
		})
	}
	// The call site, not the return address, names the caller and its
	// line: work<main's second location is main's last instruction.
	p, err := Pprof(t.Context(), src, PprofQuery{Events: []uint8{evCycles}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		if sampleFuncs(s) == "work<main" {
			if a := s.Location[1].Address; a != base+0x25c {
				t.Errorf("main's call site at %#x, want %#x", a, base+0x25c)
			}
			if a := s.Location[0].Address; a != base+0x264 {
				t.Errorf("work's leaf at %#x, want %#x", a, base+0x264)
			}
		}
	}
	// Flat asks for the flat profile, as a source without stacks gives.
	flat, err := Pprof(t.Context(), src, PprofQuery{Events: []uint8{evCycles}, Flat: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Pprof(t.Context(), fixture(), PprofQuery{Events: []uint8{evCycles}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range [][2]*profile.Profile{{flat, plain}} {
		if len(x[0].Sample) != len(x[1].Sample) || !mapsEqual(pprofTotals(x[0]), pprofTotals(x[1])) {
			t.Fatalf("flat export with stacks present differs from one without")
		}
		for _, s := range x[0].Sample {
			if len(s.Location) != 1 {
				t.Fatalf("flat sample of %d locations", len(s.Location))
			}
		}
	}
}

// TestPprofStacksFromDB: stacks carried by a version-3 batch, stored by
// storage, come back from the database as multi-frame pprof samples.
func TestPprofStacksFromDB(t *testing.T) {
	db, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mem := stackFixture()
	for _, k := range []int{1, 2} {
		rec, _ := mem.Image(t.Context(), testKey(k))
		if err := db.PutImage(rec); err != nil {
			t.Fatal(err)
		}
	}
	app, libc := testKey(1), testKey(2)
	b := &wire.Batch{Version: wire.StackVersion, Host: "alpha", Seq: 1, Epoch: 1,
		Entries: []wire.Entry{{Image: libc, Offset: 0x220, Count: 7}, {Image: app, Offset: 0x264, Count: 5}},
		Stacks: []wire.StackEntry{
			{Frames: []wire.Frame{{Image: libc, Offset: 0x220}, {Image: app, Offset: 0x274}, {Image: app, Offset: 0x238}}, Count: 7},
			{Truncated: true, Frames: []wire.Frame{{Image: app, Offset: 0x264}}, Count: 4},
		}, StackDrops: map[string]uint64{"driver.stack_table_full": 1}}
	b.Normalize()
	if _, err := db.ApplyBatch(b); err != nil {
		t.Fatal(err)
	}
	p, err := Pprof(t.Context(), db, PprofQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range p.Sample {
		got = append(got, fmt.Sprintf("%s=%d", sampleFuncs(s), s.Value[0]))
	}
	slices.Sort(got)
	if want := []string{"memcpy<work<main=7", "work<[truncated]=4"}; !slices.Equal(got, want) {
		t.Fatalf("samples %v, want %v", got, want)
	}
}
