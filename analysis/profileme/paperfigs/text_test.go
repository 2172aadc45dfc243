package paperfigs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestFigureTexts: the summaries dcpi me figure3, figure6 and figure7
// print of a figure built by hand say what its data says.
func TestFigureTexts(t *testing.T) {
	f3 := &Figure3{Model: "ev5", Workload: "hashdb", Interval: 128, MinSamples: 10, Samples: 500,
		Retires: Fig3Series{Name: "retires", Points: make([]Fig3Point, 4), Inside: 3},
		DMisses: Fig3Series{Name: "dmisses", Points: make([]Fig3Point, 2), Inside: 1}}
	want3 := "Figure 3: hashdb on ev5, S = 128, 500 retired samples of the workload's code; instructions with >= 10 samples\n" +
		"  retires: 3 of 4 inside 1 ± 1/sqrt(k) (75%; about 67% expected)\n" +
		"  dmisses: 1 of 2 inside 1 ± 1/sqrt(k) (50%; about 67% expected)\n"
	var b bytes.Buffer
	if err := f3.WriteText(&b); err != nil || b.String() != want3 {
		t.Errorf("figure 3: %v\n%s\nwant\n%s", err, &b, want3)
	}

	var c Fig6Curves
	c.Counts[0], c.TruthFound[MaxHistory-1] = 0.5, 1
	f6 := &Figure6{Model: "ev5", Workloads: []Fig6Result{{Workload: "sort", Samples: 7, MissingEdges: 1, Intra: c, Inter: c}},
		Total: Fig6Result{Workload: "total", Samples: 7, MissingEdges: 1, Intra: c, Inter: c}}
	b.Reset()
	if err := f6.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "Figure 6: ") != 2 || !strings.Contains(out, "Figure 6: sort on ev5, 7 sampled instructions (1 more left out") ||
		strings.Count(out, "  intraprocedural\n") != 2 || strings.Count(out, "\n      1   50.0%     0.0%") != 4 ||
		strings.Count(out, "\n") != 2*(1+2*(2+MaxHistory)) || !strings.Contains(out, "  100.0%\n") {
		t.Errorf("figure 6:\n%s", out)
	}

	f7 := &Figure7{Model: "ev6", Workload: "stream", Interval: 100, PairWindow: 128, IssueWidth: 4, Points: make([]Fig7Point, 5),
		Spearman: 0.25, TopLatencyWastedRank: 3, MinSamples: 30,
		Disagree: []Fig7Point{{PC: 0x120000100, Latency: 12.5, LatencyRank: 1, Wasted: 3, WastedRank: 5, UsefulShares: 0.5}}}
	want7 := "Figure 7: stream on ev6, S = 100, W = 128, C = 4: 5 instructions with >= 30 paired samples\n" +
		"Spearman rank correlation of latency and wasted slots: 0.25; the largest latency ranks 3 by wasted slots\n" +
		"most disagreeing (pc, latency cycles, rank; wasted slots, rank; useful/available):\n" +
		"  0x120000100  12.5  #1;  3  #5;  0.50\n"
	b.Reset()
	if err := f7.WriteText(&b); err != nil || b.String() != want7 {
		t.Errorf("figure 7: %v\n%s\nwant\n%s", err, &b, want7)
	}
	if js, err := json.Marshal(f7); err != nil || strings.Contains(string(js), "MinSamples") {
		t.Errorf("figure 7's JSON names its summary's MinSamples: %s", js)
	}
}
