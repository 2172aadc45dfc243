package fleet

import (
	"strings"
	"testing"
)

// TestSeriesSVG: the run's plot has the rates published and stored, the
// backlog, and the load's end in each panel, on round axes, with the
// verdict below.
func TestSeriesSVG(t *testing.T) {
	series := []Point{{t: 0}, {t: 1, published: 2e6, stored: 1e6}, {t: 2, published: 4e6, stored: 4e6}}
	var b strings.Builder
	r := Result{Hosts: 7, DelayP50: 1, DelayMax: 1, LateGenRate: 2e6, LateStoredRate: 3e6, Sustained: true}
	if err := SeriesSVG(&b, r, series, 2); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"<svg", "7 hosts", "samples/s (millions)", "samples (millions)", "sustained", "</svg>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
	if n := strings.Count(svg, "<path"); n != 5 {
		t.Errorf("%d lines, want 5 (two rates, the backlog, the load's end twice)", n)
	}
}
