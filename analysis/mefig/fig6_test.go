package mefig

import (
	"bytes"
	"encoding/xml"
	"testing"
)

// TestFigure6 pins path reconstruction on sort (1500 keys, one
// instruction in about 200 sampled, procedures without unresolved jumps):
// the true path is among the candidates nearly always (the reconstruction is
// sound against hwsim's transfer trace); success never falls as history
// bits are added (more bits only remove candidates); history beats the PC
// alone by far, and at 11 bits at least 40% of the samples' paths are
// reconstructed exactly; the partner helps, never hurts.
func TestFigure6(t *testing.T) {
	c := DefaultFig6()
	c.Args, c.Interval = []string{"1500"}, 199
	f, err := RunFigure6(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples (%d in procedures with missing edges left out); truth found %.3f; history %.3f; with pairs %.3f; by distance %.3f",
		f.Samples, f.MissingEdges, f.TruthFound, f.History, f.WithPairs, f.ByDistance)
	if f.Samples < 1000 {
		t.Fatalf("%d samples: too few", f.Samples)
	}
	if f.TruthFound < 0.995 {
		t.Errorf("true path among the candidates in %.3f of the samples at 11 bits, want nearly all", f.TruthFound)
	}
	for i := 1; i < len(f.History); i++ {
		if f.History[i] < f.History[i-1] || f.WithPairs[i] < f.WithPairs[i-1] {
			t.Errorf("success fell from %d to %d bits: history %.4f -> %.4f, pairs %.4f -> %.4f", i-1, i,
				f.History[i-1], f.History[i], f.WithPairs[i-1], f.WithPairs[i])
		}
		if f.WithPairs[i] < f.History[i] {
			t.Errorf("%d bits: the partner made it worse (%.4f < %.4f)", i, f.WithPairs[i], f.History[i])
		}
	}
	if f.History[11] < 0.40 || f.History[11] < 2*f.History[0] {
		t.Errorf("at 11 bits %.3f reconstructed (PC alone %.3f): want at least 0.40 and twice the PC alone", f.History[11], f.History[0])
	}
	var b bytes.Buffer
	if err := WriteFigure6SVG(&b, f); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b.Bytes(), new(struct{})); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
}
