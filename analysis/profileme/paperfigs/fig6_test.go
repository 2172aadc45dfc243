package paperfigs

import (
	"bytes"
	"encoding/xml"
	"testing"
)

// TestFigure6 pins path reconstruction as the paper defines it on sort
// (1500 keys, one instruction in about 500 sampled): the true segment is
// among the history-consistent candidates of every complete walk
// (>= 99.5%, both graphs, every h); history bits beat execution counts
// and pairs are at least history bits at every h; the history scheme and
// the counts are better at 1 branch than at 11 (longer segments are
// harder); interprocedural segments are harder than intraprocedural ones
// at 11; and the history bits alone often leave several candidates (their
// unique-and-true rate is below the history scheme's).
func TestFigure6(t *testing.T) {
	c := DefaultFig6()
	c.Workloads, c.Interval = []Fig6Workload{{"sort", []string{"1500"}}}, 499
	f, err := RunFigure6(c)
	if err != nil {
		t.Fatal(err)
	}
	r := f.Total
	t.Logf("%d samples (%d left out: missing edges)", r.Samples, r.MissingEdges)
	if r.Samples < 1000 || len(f.Workloads) != 1 || f.Workloads[0].Samples != r.Samples {
		t.Fatalf("%d samples (%d workloads): too few", r.Samples, len(f.Workloads))
	}
	for _, g := range []struct {
		name string
		c    *Fig6Curves
	}{{"intra", &r.Intra}, {"inter", &r.Inter}} {
		c := g.c
		t.Logf("%s: counts %.3f\n history %.3f\n pairs %.3f\n bits alone %.3f\n truth found %.3f of complete %.3f",
			g.name, c.Counts, c.History, c.Pairs, c.HistoryUnique, c.TruthFound, c.Complete)
		for h := range MaxHistory {
			if c.TruthFound[h] < 0.995 || c.Complete[h] < 0.8 {
				t.Errorf("%s, %d bits: true segment among the candidates of %.3f of the complete walks (%.3f complete), want >= 0.995",
					g.name, h+1, c.TruthFound[h], c.Complete[h])
			}
			if c.History[h] < c.Counts[h] || c.Pairs[h] < c.History[h] {
				t.Errorf("%s, %d bits: counts %.3f, history %.3f, pairs %.3f: want counts <= history <= pairs",
					g.name, h+1, c.Counts[h], c.History[h], c.Pairs[h])
			}
			if c.HistoryUnique[h] > c.History[h] || c.PairsUnique[h] < c.HistoryUnique[h] {
				t.Errorf("%s, %d bits: bits alone %.3f (history scheme %.3f), with pairs %.3f", g.name, h+1, c.HistoryUnique[h], c.History[h], c.PairsUnique[h])
			}
		}
		if c.History[0] <= c.History[MaxHistory-1] || c.Counts[0] <= c.Counts[MaxHistory-1]+0.2 {
			t.Errorf("%s: success at 1 branch (history %.3f, counts %.3f) not above 11's (%.3f, %.3f)",
				g.name, c.History[0], c.Counts[0], c.History[MaxHistory-1], c.Counts[MaxHistory-1])
		}
		if c.History[MaxHistory-1] < c.Counts[MaxHistory-1]+0.3 {
			t.Errorf("%s, 11 bits: history %.3f, counts %.3f: want the history far ahead", g.name, c.History[MaxHistory-1], c.Counts[MaxHistory-1])
		}
		if c.HistoryUnique[MaxHistory-1] >= c.History[MaxHistory-1] {
			t.Errorf("%s: the bits alone leave one candidate as often as the scheme succeeds", g.name)
		}
	}
	if r.Inter.History[MaxHistory-1] >= r.Intra.History[MaxHistory-1] || r.Inter.Counts[MaxHistory-1] >= r.Intra.Counts[MaxHistory-1] {
		t.Errorf("11 bits: interprocedural (history %.3f, counts %.3f) not harder than intraprocedural (%.3f, %.3f)",
			r.Inter.History[MaxHistory-1], r.Inter.Counts[MaxHistory-1], r.Intra.History[MaxHistory-1], r.Intra.Counts[MaxHistory-1])
	}
	var b bytes.Buffer
	if err := WriteFigure6SVG(&b, f); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b.Bytes(), new(struct{})); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
	if _, err := RunFigure6(Fig6Config{Model: "ev5", Interval: 10, PairWindow: 50}); err == nil {
		t.Error("no workloads accepted")
	}
	if _, err := RunFigure6(Fig6Config{Model: "ev5", Workloads: []Fig6Workload{{Name: "no-such-workload"}}, Interval: 10, PairWindow: 50}); err == nil {
		t.Error("an unknown workload accepted")
	}
}
