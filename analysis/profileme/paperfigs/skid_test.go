package paperfigs

import (
	"bytes"
	"encoding/xml"
	"io"
	"slices"
	"testing"

	"dcpi/hwsim/alpha"
)

// TestSkid pins the counters' skid measured on five committed workloads
// (DefaultSkid): on both cores every DMISS interrupt is taken
// InterruptSkid cycles after the miss is counted (our model defers it
// nowhere in user code and has no interrupt-latency variation); in
// instructions the 21264 core's distance is wider spread than the
// 21164's on every workload (a larger interquartile range and more
// distinct distances), as the paper's Pentium Pro smear is wider than
// its 21164 peak. On ptrchase's chase, the counter's samples of the hot
// load's misses land next to never on it, on the 21264 core mostly on
// an earlier instruction of the loop (the next iteration's first load,
// waiting at the head of the window), while ProfileMe's D-miss samples
// fall on it.
func TestSkid(t *testing.T) {
	f, err := RunSkid(DefaultSkid())
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := f.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	for _, r := range DefaultSkid().Runs {
		ev5, ev6 := f.Find(r.Workload, "ev5"), f.Find(r.Workload, "ev6")
		if ev5 == nil || ev6 == nil {
			t.Fatalf("%s: series missing", r.Workload)
		}
		for _, s := range []*SkidSeries{ev5, ev6} {
			if s.N() < 100 {
				t.Errorf("%s on %s: %d interrupts, want >= 100", s.Workload, s.Model, s.N())
			}
			if s.Cycles.Mode != alpha.InterruptSkid || s.Cycles.ModeShare < 0.9 {
				t.Errorf("%s on %s: %.0f%% of interrupts at %d cycles: want >= 90%% at %d", s.Workload, s.Model, 100*s.Cycles.ModeShare, s.Cycles.Mode, alpha.InterruptSkid)
			}
			if s.Instructions.Min < 1 {
				t.Errorf("%s on %s: an interrupt taken %d instructions after its cause: want >= 1", s.Workload, s.Model, s.Instructions.Min)
			}
		}
		if ev6.Instructions.IQR() <= ev5.Instructions.IQR() || ev6.Instructions.Distinct <= ev5.Instructions.Distinct {
			t.Errorf("%s: instruction distance IQR %d, %d distinct on the 21164; %d, %d on the 21264 core: want the 21264's wider on both",
				r.Workload, ev5.Instructions.IQR(), ev5.Instructions.Distinct, ev6.Instructions.IQR(), ev6.Instructions.Distinct)
		}
	}
	if f.Procedure != "chase" || len(f.Smears) != 2 {
		t.Fatalf("smear of %q with %d cores: want ptrchase's chase on two", f.Procedure, len(f.Smears))
	}
	for _, sm := range f.Smears {
		var ct, mt uint64
		for i := range sm.Counter {
			ct += sm.Counter[i]
			mt += sm.ProfileMe[i]
		}
		ct += sm.Elsewhere
		if ct < 100 || mt < 100 {
			t.Fatalf("%s: %d counter and %d ProfileMe samples: want >= 100 each", sm.Model, ct, mt)
		}
		if share := safeShare(sm.Counter[f.LoadIndex], ct); share > 0.05 {
			t.Errorf("%s: %.0f%% of the load's counter samples at the load: want < 5%%", sm.Model, 100*share)
		}
		if share := safeShare(sm.ProfileMe[f.LoadIndex], mt); share < 0.4 {
			t.Errorf("%s: %.0f%% of chase's ProfileMe D-miss samples at the load: want >= 40%% (chase has two loads)", sm.Model, 100*share)
		}
		if sm.Model == "ev6" {
			if peak := slices.Index(sm.Counter, slices.Max(sm.Counter)); peak >= f.LoadIndex {
				t.Errorf("ev6: the load's counter samples peak at %+d: want before it (the next iteration's first load)", peak-f.LoadIndex)
			}
		}
	}
	var svg bytes.Buffer
	if err := f.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&svg)
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
}

func TestSkidErrors(t *testing.T) {
	for name, change := range map[string]func(*SkidOptions){
		"no models":       func(o *SkidOptions) { o.Models = nil },
		"no runs":         func(o *SkidOptions) { o.Runs = nil },
		"cycles":          func(o *SkidOptions) { o.Event = alpha.EvCycles },
		"unknown event":   func(o *SkidOptions) { o.Event = alpha.NumEvents },
		"short period":    func(o *SkidOptions) { o.CounterPeriod = [2]uint64{4, 8} },
		"inverted period": func(o *SkidOptions) { o.CounterPeriod = [2]uint64{40, 30} },
		"unknown workload": func(o *SkidOptions) {
			o.Runs = []SkidRun{{Workload: "no-such-workload"}}
			o.Smear = ""
		},
		"smear not run": func(o *SkidOptions) {
			o.Runs = []SkidRun{{Workload: "missloop", Args: []string{"1024", "300"}}}
			o.Models = o.Models[:1]
			o.Smear = "ptrchase"
		},
	} {
		o := DefaultSkid()
		change(&o)
		if _, err := RunSkid(o); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
