package paperfigs

import (
	"bytes"
	"encoding/xml"
	"testing"
)

// TestFigure7 pins sec. 6 on the 21264 core: on strproc, over the
// instructions with 30 or more paired samples, latency ranks them far
// from how wasted issue slots do (Spearman below 0.7, some instruction's
// two ranks a quarter of the list apart), while on
// matmul, whose loops keep a similar concurrency, the two agree (above
// 0.8): the paper's "latency is not well correlated with wasted issue
// slots, due to varying levels of useful concurrency", and "when
// concurrency is fairly constant, latency is highly correlated".
func TestFigure7(t *testing.T) {
	f, err := RunFigure7(DefaultFig7())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("strproc: %d instructions, Spearman %.2f, the largest latency ranks %d by wasted slots", len(f.Points), f.Spearman, f.TopLatencyWastedRank)
	if len(f.Points) < 50 || f.Spearman > 0.7 {
		t.Errorf("strproc: %d instructions, Spearman %.2f: want >= 50 and below 0.7", len(f.Points), f.Spearman)
	}
	if len(f.Disagree) != 5 || abs(f.Disagree[0].LatencyRank-f.Disagree[0].WastedRank) < len(f.Points)/4 {
		t.Errorf("the most disagreeing instruction: %+v", f.Disagree)
	}
	c := DefaultFig7()
	c.Workload, c.Args = "matmul", []string{"40"}
	g, err := RunFigure7(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("matmul: %d instructions, Spearman %.2f", len(g.Points), g.Spearman)
	if g.Spearman < 0.8 {
		t.Errorf("matmul: Spearman %.2f, want above 0.8", g.Spearman)
	}
	var b bytes.Buffer
	if err := WriteFigure7SVG(&b, f); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b.Bytes(), new(struct{})); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
}
