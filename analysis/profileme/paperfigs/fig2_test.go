package paperfigs

import (
	"bytes"
	"encoding/xml"
	"io"
	"testing"
)

// TestFigure2 pins the figure's result on missloop: ProfileMe puts at
// least 90% of its D-miss samples on the load, on both cores; a DMISS
// counter's samples are a small minority there and peak after it, further
// after it on the 21264 core, which retires many instructions in the
// cycles an interrupt takes to arrive, than on the in-order 21164.
func TestFigure2(t *testing.T) {
	f, err := RunFigure2(DefaultFigure2())
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := f.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	if f.LoadIndex == 0 || f.LoadIndex >= len(f.PCs)-100 {
		t.Fatalf("load at index %d of %d: not missloop's load before its nops", f.LoadIndex, len(f.PCs))
	}
	for _, model := range []string{"ev5", "ev6"} {
		me, ctr := f.Find(model, MethodProfileMe), f.Find(model, MethodCounter)
		if me == nil || ctr == nil {
			t.Fatalf("%s: series missing", model)
		}
		if me.AtLoadShare() < 0.9 || me.Total < 100 {
			t.Errorf("%s: ProfileMe has %.0f%% of %d D-miss samples at the load, want >= 90%%", model, 100*me.AtLoadShare(), me.Total)
		}
		if ctr.AtLoadShare() > 0.1 || ctr.Peak <= 0 || ctr.Total < 100 {
			t.Errorf("%s: the counter has %.0f%% of %d samples at the load, peak at %+d: want a small minority, peak after it", model, 100*ctr.AtLoadShare(), ctr.Total, ctr.Peak)
		}
	}
	if a, b := f.Find("ev5", MethodCounter).Peak, f.Find("ev6", MethodCounter).Peak; b <= a {
		t.Errorf("counter peaks at %+d on the 21164 and %+d on the 21264: want the out-of-order core's further", a, b)
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

func TestFigure2Errors(t *testing.T) {
	o := DefaultFigure2()
	o.Procedure = "no_such_procedure"
	if _, err := RunFigure2(o); err == nil {
		t.Error("a missing procedure accepted")
	}
	o = DefaultFigure2()
	o.Workload = "no-such-workload"
	if _, err := RunFigure2(o); err == nil {
		t.Error("a missing workload accepted")
	}
	o = DefaultFigure2()
	o.Models = nil
	if _, err := RunFigure2(o); err == nil {
		t.Error("no models accepted")
	}
}
