package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/simhost"
	"dcpi/storage"
)

// TestChoosePeriods: the selected hosts' registered periods; a
// disagreement is a conflict unless --period settles it; a host without
// periods counts as the default configuration, and is named.
func TestChoosePeriods(t *testing.T) {
	cyc, imiss, dmiss := uint8(alpha.EvCycles), uint8(alpha.EvIMiss), uint8(alpha.EvDMiss)
	mux := storage.Node{Host: "m", CPUs: 1, Periods: simhost.EventsPerSample(hwsim.MuxProfile())}
	def := storage.Node{Host: "d", CPUs: 1, Periods: simhost.EventsPerSample(hwsim.DefaultProfile())}
	old := storage.Node{Host: "old", CPUs: 1}
	nodes := []storage.Node{mux, def, old}

	pc, err := choosePeriods(nodes, []string{"m"}, nil)
	if err != nil || pc.periods[cyc] != 63488 || pc.periods[imiss] != 16384 || pc.periods[dmiss] != 16384 || len(pc.conflicts) != 0 || pc.legacy != nil {
		t.Fatalf("mux host alone: %+v %v", pc, err)
	}
	// The default host counts cycles and imiss only: dmiss is the mux
	// host's alone, imiss a disagreement.
	pc, err = choosePeriods(nodes, []string{"d", "m"}, nil)
	if err != nil || pc.periods[cyc] != 63488 || pc.periods[dmiss] != 16384 || len(pc.conflicts) != 1 ||
		pc.conflicts[imiss] != "16384 on m; 4096 on d" {
		t.Fatalf("mux and default hosts: %+v %v", pc, err)
	}
	if _, ok := pc.periods[imiss]; ok {
		t.Errorf("imiss has a period despite the conflict: %v", pc.periods)
	}
	pc, err = choosePeriods(nodes, []string{"d", "m"}, []string{"imiss=8192"})
	if err != nil || pc.periods[imiss] != 8192 || len(pc.conflicts) != 0 {
		t.Fatalf("--period settles it: %+v %v", pc, err)
	}
	// A host of an earlier build (or not registered at all) gets the
	// defaults: it agrees with the default host.
	pc, err = choosePeriods(nodes, []string{"d", "old", "unregistered"}, nil)
	if err != nil || pc.periods[imiss] != 4096 || pc.periods[dmiss] != 4096 || len(pc.conflicts) != 0 ||
		strings.Join(pc.legacy, ",") != "old,unregistered" {
		t.Fatalf("legacy hosts: %+v %v", pc, err)
	}
	if _, err := choosePeriods(nodes, []string{"m"}, []string{"imiss"}); err == nil {
		t.Error("--period imiss accepted")
	}

	// check refuses a profile holding the conflicting event, whether as
	// samples or not; one without it passes.
	pc, _ = choosePeriods(nodes, []string{"d", "m"}, nil)
	withImiss := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cycles"}, {Type: "cycles_samples"}, {Type: "imiss", Unit: "samples"}}}
	err = pc.check(withImiss, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "different periods (events per sample: 16384 on m; 4096 on d)") || !strings.Contains(err.Error(), "--period imiss=N") {
		t.Errorf("conflict: %v", err)
	}
	if err := pc.check(&profile.Profile{SampleType: withImiss.SampleType[:2]}, &bytes.Buffer{}); err != nil {
		t.Errorf("no imiss in the profile: %v", err)
	}
	pc, _ = choosePeriods(nodes, []string{"old"}, nil)
	var note bytes.Buffer
	if err := pc.check(&profile.Profile{SampleType: withImiss.SampleType[:2], Sample: []*profile.Sample{{}}}, &note); err != nil ||
		note.String() != "note: no recorded sampling periods for old (registered by an earlier dcpi): using the default configuration's (cycles 63488, other events 4096; --period sets them)\n" {
		t.Errorf("legacy note %q, %v", note.String(), err)
	}
}

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
