package main

import (
	"path/filepath"
	"strings"
	"testing"

	"dcpi/hwsim/alpha"
	"dcpi/storage"
)

// TestPprofMuxPeriods: dcpi profile --mux records the host's events per
// sample, and dcpi pprof estimates with them: each multiplexed event's
// values are its samples x 4 x 4096, cycles' x 63488.
func TestPprofMuxPeriods(t *testing.T) {
	// The timing model makes the misses (--timing=false has none).
	db := filepath.Join(t.TempDir(), "mux.db")
	if _, stderr, err := run(t, "profile", "--mux", "--seconds", "0.2", "-o", db, "--", "interp"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	sdb, err := storage.Open(db, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := sdb.Nodes()
	sdb.Close()
	if err != nil || len(nodes) != 1 || nodes[0].Periods[uint8(alpha.EvIMiss)] != 4*4096 {
		t.Fatalf("node registry %+v %v: want one host, imiss 4 x 4096 events per sample", nodes, err)
	}
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	if _, stderr, err := run(t, "pprof", "--db", db, "-o", out); err != nil || strings.Contains(stderr, "note:") {
		t.Fatalf("%v\n%s", err, stderr)
	}
	p := readProfile(t, out)
	want := map[string]int64{"cycles": 63488, "imiss": 16384, "dmiss": 16384, "branchmp": 16384, "dtbmiss": 16384}
	seen := map[string]int64{} // samples per event
	for i := 0; i+1 < len(p.SampleType); i += 2 {
		name := p.SampleType[i].Type
		period, ok := want[name]
		if !ok || p.SampleType[i+1].Type != name+"_samples" {
			t.Fatalf("sample types %v", p.SampleType)
		}
		for _, s := range p.Sample {
			if s.Value[i] != s.Value[i+1]*period {
				t.Fatalf("%s: sample %v: estimate is not samples x %d", name, s.Value, period)
			}
			seen[name] += s.Value[i+1]
		}
	}
	if seen["cycles"] == 0 || seen["imiss"] == 0 {
		t.Fatalf("samples per event %v: want cycles and imiss", seen)
	}
	if p.Period != 63488 || p.PeriodType.Type != "cycles" {
		t.Errorf("period %d %v", p.Period, p.PeriodType)
	}
	// --period still overrides the record.
	if _, stderr, err := run(t, "pprof", "--db", db, "--event", "imiss", "--period", "imiss=100", "-o", out); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if p := readProfile(t, out); p.Period != 100 || p.Sample[0].Value[0] != 100*p.Sample[0].Value[1] {
		t.Errorf("--period imiss=100: period %d, sample %v", p.Period, p.Sample[0].Value)
	}
}
