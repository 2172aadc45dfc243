package pprofexport

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// pprofTotals sums the profile's values per sample type, and per label
// value of key when key is not "".
func pprofTotals(p *profile.Profile) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		for i, v := range s.Value {
			out[p.SampleType[i].Type] += v
		}
	}
	return out
}

// sourceTotals sums src's counts per event name for q.
func sourceTotals(t *testing.T, src analysis.Source, q storage.Query) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := src.Profile(t.Context(), q, func(_ wire.ImageKey, _ uint64, ev uint8, _ string, n uint64) error {
		out[analysis.EventName(ev)] += int64(n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPprofRoundTripsAndConserves(t *testing.T) {
	src := fixture()
	for _, tc := range []struct {
		name string
		q    PprofQuery
	}{
		{"fleet", PprofQuery{}},
		{"events", PprofQuery{Events: []uint8{evIMiss, evCycles}}},
		{"by host", PprofQuery{Filter: storage.Query{Hosts: []string{"alpha", "beta", "gamma"}}, ByHost: true}},
		{"by epoch", PprofQuery{Filter: storage.Query{Epochs: []uint64{1, 2}}, ByEpoch: true}},
		{"by both", PprofQuery{Filter: storage.Query{Epochs: []uint64{2, 1}, Hosts: []string{"beta"}}, ByEpoch: true, ByHost: true}},
		{"one host", PprofQuery{Filter: storage.Query{Hosts: []string{"beta"}}}},
		{"image", PprofQuery{ImagePaths: []string{"app"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Pprof(t.Context(), src, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.CheckValid(); err != nil {
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
			want := sourceTotals(t, src, tc.q.Filter)
			if tc.q.Events != nil {
				for _, n := range []string{"dmiss"} {
					delete(want, n)
				}
			}
			if tc.q.ImagePaths != nil {
				want = sourceTotals(t, src, storage.Query{Images: []wire.ImageKey{testKey(1)}})
			}
			if got := pprofTotals(back); !mapsEqual(got, want) {
				t.Errorf("totals %v, want %v", got, want)
			}
			if tc.q.Events != nil && (back.SampleType[0].Type != "imiss" || back.DefaultSampleType != "imiss") {
				t.Errorf("sample types %v default %q", back.SampleType, back.DefaultSampleType)
			}
			for _, s := range back.Sample {
				hosts, epochs := s.Label["host"], s.NumLabel["epoch"]
				if tc.q.ByHost || len(tc.q.Filter.Hosts) == 1 {
					if len(hosts) != 1 || !slices.Contains(tc.q.Filter.Hosts, hosts[0]) {
						t.Fatalf("sample %v: host labels %v", s, hosts)
					}
				} else if hosts != nil {
					t.Fatalf("sample %v: host labels %v", s, hosts)
				}
				if tc.q.ByEpoch != (len(epochs) == 1) {
					t.Fatalf("sample %v: epoch labels %v", s, epochs)
				}
				loc := s.Location[0]
				if loc.Mapping == nil || loc.Address < loc.Mapping.Start || len(loc.Line) != 1 {
					t.Fatalf("location %+v", loc)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestPprofSymbolsAndMappings checks one location of each kind: a named
// procedure, an offset no symbol covers, the kernel, and an image never
// uploaded.
func TestPprofSymbolsAndMappings(t *testing.T) {
	p, err := Pprof(t.Context(), fixture(), PprofQuery{Events: []uint8{evCycles}})
	if err != nil {
		t.Fatal(err)
	}
	at := map[uint64]*profile.Location{}
	for _, l := range p.Location {
		at[l.Address] = l
	}
	for _, tc := range []struct {
		addr       uint64
		fn, file   string
		buildIDHex bool
	}{
		{base + 0x210, "main", "/bin/app", true},
		{base + 0x264, "work", "/bin/app", true},
		{base + 0x100, symbolize.UnknownProcedure, "/bin/app", true},
		{0x60000000150, "idle", "/vmunix", true},
		{0x40, symbolize.UnknownProcedure, testKey(9).String(), false},
	} {
		l := at[tc.addr]
		if tc.addr == base+0x264 {
			l = at[base+0x268] // 0x264 holds imiss only
		}
		if l == nil {
			t.Errorf("no location at %#x", tc.addr)
			continue
		}
		if l.Line[0].Function.Name != tc.fn || l.Mapping.File != tc.file {
			t.Errorf("%#x: %s in %s, want %s in %s", tc.addr, l.Line[0].Function.Name, l.Mapping.File, tc.fn, tc.file)
		}
	}
	for _, m := range p.Mapping {
		if m.File == "/bin/app" && m.BuildID != "696d6167652d30303031" { // "image-0001"
			t.Errorf("build ID %q", m.BuildID)
		}
	}
	// Each image's procedures are distinct functions; no two share an ID.
	ids := map[uint64]bool{}
	for _, f := range p.Function {
		if ids[f.ID] {
			t.Errorf("function ID %d twice", f.ID)
		}
		ids[f.ID] = true
	}
}

func TestPprofBadQueries(t *testing.T) {
	for _, q := range []PprofQuery{
		{ByHost: true},
		{ByEpoch: true},
		{Events: []uint8{}},
		{Events: []uint8{0, 0}},
	} {
		if _, err := Pprof(t.Context(), fixture(), q); !errors.Is(err, analysis.ErrQuery) {
			t.Errorf("%+v: err %v, want analysis.ErrQuery", q, err)
		}
	}
}
