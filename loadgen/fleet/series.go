package fleet

import (
	"dcpi/internal/svgchart"
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// publishToQueryable is, for each poll of the load whose published
// count the cluster reached later, the seconds until it did: the delay
// from publish to queryable, at the polls' resolution (one second).
// Sorted.
func publishToQueryable(series []Point) []float64 {
	var out []float64
	j := 0
	for _, p := range series {
		if p.published == 0 {
			continue
		}
		for j < len(series) && (series[j].t < p.t || series[j].stored < p.published) {
			j++
		}
		if j == len(series) {
			break
		}
		out = append(out, series[j].t-p.t)
	}
	sort.Float64s(out)
	return out
}

func seriesJSON(series []Point) []byte {
	type point struct {
		T         float64 `json:"t"`
		Published uint64  `json:"published"`
		Stored    uint64  `json:"stored"`
	}
	ps := make([]point, len(series))
	for i, p := range series {
		ps[i] = point{p.t, p.published, p.stored}
	}
	b, _ := json.MarshalIndent(ps, "", " ")
	return b
}

// SeriesSVG plots a run's polls in two panels: the rates published and
// stored (over the polls of the last 10 s), and the backlog — samples
// published and not yet queryable — whose bumps are the stalls.
func SeriesSVG(w io.Writer, r Result, series []Point, loadEnd float64) error {
	const smooth = 10.0 // seconds
	var pubRate, storedRate, backlog []svgchart.XY
	var maxT, maxRate, maxBacklog float64
	for i, p := range series {
		maxT = max(maxT, p.t)
		b := max(float64(p.published)-float64(p.stored), 0)
		maxBacklog = max(maxBacklog, b)
		backlog = append(backlog, svgchart.XY{X: p.t, Y: b})
		j := i
		for j > 0 && p.t-series[j-1].t <= smooth {
			j--
		}
		if dt := p.t - series[j].t; dt > 0 {
			// A poll answered by a replica a little behind may
			// read less than the one before: no negative rates.
			pr := max(float64(p.published)-float64(series[j].published), 0) / dt
			sr := max(float64(p.stored)-float64(series[j].stored), 0) / dt
			maxRate = max(maxRate, pr, sr)
			pubRate = append(pubRate, svgchart.XY{X: p.t, Y: pr})
			storedRate = append(storedRate, svgchart.XY{X: p.t, Y: sr})
		}
	}
	rateUnit, rateScale := unitFor(maxRate, "samples/s")
	blUnit, blScale := unitFor(maxBacklog, "samples")
	scale := func(pts []svgchart.XY, by float64) []svgchart.XY {
		for i := range pts {
			pts[i].Y /= by
		}
		return pts
	}
	xa := svgchart.Axis{Min: 0, Max: svgchart.NiceCeil(maxT)}
	c := svgchart.New()
	ra := svgchart.Axis{Min: 0, Max: svgchart.NiceCeil(maxRate / rateScale)}
	rp := c.Panel(0, fmt.Sprintf("%d hosts: rate (over %g s)", r.Hosts, smooth), "seconds since the load began", rateUnit, xa, ra)
	rp.Line([]svgchart.XY{{X: loadEnd, Y: 0}, {X: loadEnd, Y: ra.Max}}, "#ccc")
	rp.Line(scale(pubRate, rateScale), "#36c")
	rp.Line(scale(storedRate, rateScale), "#c33")
	rp.Label(svgchart.XY{X: 0, Y: 0.94 * ra.Max}, "published", "#36c")
	rp.Label(svgchart.XY{X: 0, Y: 0.87 * ra.Max}, "stored (queryable)", "#c33")
	ba := svgchart.Axis{Min: 0, Max: svgchart.NiceCeil(maxBacklog / blScale)}
	bp := c.Panel(1, "backlog: published, not yet queryable", "seconds since the load began", blUnit, xa, ba)
	bp.Line([]svgchart.XY{{X: loadEnd, Y: 0}, {X: loadEnd, Y: ba.Max}}, "#ccc")
	bp.Line(scale(backlog, blScale), "#c33")
	verdict := "not sustained"
	if r.Sustained {
		verdict = "sustained"
	}
	return c.Write(w, fmt.Sprintf("dcpi loadgen: %d hosts, %.0f s of load", r.Hosts, loadEnd),
		fmt.Sprintf("delay to queryable p50 %.0f s, max %.0f s; second half %.0f%% stored; %s (grey: the load's end)",
			r.DelayP50, r.DelayMax, 100*r.LateStoredRate/max(r.LateGenRate, 1), verdict))
}

// unitFor names what of and scales it to millions or billions when v is
// that large.
func unitFor(v float64, what string) (string, float64) {
	switch {
	case v >= 1e9:
		return what + " (billions)", 1e9
	case v >= 1e6:
		return what + " (millions)", 1e6
	}
	return what, 1
}
