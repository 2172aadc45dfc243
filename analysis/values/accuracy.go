package values

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// AccuracyPoint is one load's worst level share against the truth: of
// its levels, the one whose estimated share is farthest from the true
// share of its executions.
type AccuracyPoint struct {
	Image   string  `json:"image"`
	PC      uint64  `json:"pc"`
	Level   string  `json:"level"`
	Samples uint64  `json:"samples"` // N: the load's latencies offered to its hot list
	Tau     uint64  `json:"tau"`
	Est     float64 `json:"estimate"`
	Truth   float64 `json:"truth"`
	// Error is |Est − Truth|; Stated the estimate's standard deviation
	// as dcpi values states it (τ·√c/N) plus the sample's own
	// (√(p(1−p)/N)), so that 1/√N bounds two of them at p = ½, τ = 1.
	Error  float64 `json:"error"`
	Stated float64 `json:"stated"`
	// SameLine: the load follows a load of the same line (Row.SameLine),
	// which the interpreter measures as a D-cache hit.
	SameLine bool `json:"same_line_follower,omitempty"`
}

// Accuracy is the latency report's error against the truth: one point
// per load with truth (Row.Truth), sorted by samples.
func Accuracy(rep *Report) []AccuracyPoint {
	var out []AccuracyPoint
	for _, r := range rep.Rows {
		if r.Truth == nil || len(r.Levels) != int(NumLevels) || len(r.Truth.Levels) != int(NumLevels) || r.Samples == 0 {
			continue
		}
		tau := uint64(math.Round(1 / r.P))
		var counted [NumLevels]float64
		for _, v := range r.Values {
			counted[BinLatency(v.Raw)] += float64(v.Estimate) / float64(tau)
		}
		var worst AccuracyPoint
		for lv := range NumLevels {
			p, est := r.Truth.Levels[lv], r.Levels[lv]
			n := float64(r.Samples)
			pt := AccuracyPoint{Image: r.Image, PC: r.PC, Level: lv.String(), Samples: r.Samples, Tau: tau, Est: est, Truth: p, SameLine: r.SameLine,
				Error:  math.Abs(est - p),
				Stated: float64(tau)*math.Sqrt(counted[lv])/n + math.Sqrt(p*(1-p)/n)}
			if lv == 0 || pt.Error > worst.Error {
				worst = pt
			}
		}
		out = append(out, worst)
	}
	slices.SortStableFunc(out, func(a, b AccuracyPoint) int { return cmp.Compare(a.Samples, b.Samples) })
	return out
}

// AccuracySummary counts the points within their bounds, same-line
// followers apart.
type AccuracySummary struct {
	Points      int `json:"points"`          // loads, followers excluded
	WithinTwoSD int `json:"within_two_sd"`   // Error <= 2·Stated
	WithinSqrt  int `json:"within_1_sqrt_n"` // Error <= 1/√N
	SameLine    int `json:"same_line_followers"`
}

// Summarize counts pts within 2 stated standard deviations and within
// 1/√N, and the same-line followers, which it leaves out of the rest.
func Summarize(pts []AccuracyPoint) AccuracySummary {
	var s AccuracySummary
	for _, p := range pts {
		if p.SameLine {
			s.SameLine++
			continue
		}
		s.Points++
		if p.Error <= 2*p.Stated {
			s.WithinTwoSD++
		}
		if p.Error <= 1/math.Sqrt(float64(p.Samples)) {
			s.WithinSqrt++
		}
	}
	return s
}

// WriteAccuracySVG draws pts: |estimate − truth| against samples per
// load on log scales, a colour per image, beside the line 1/√N.
func WriteAccuracySVG(w io.Writer, pts []AccuracyPoint, title string) error {
	const (
		width, height          = 640, 420
		left, right, top, bott = 70, 170, 40, 50
		yMin                   = 1e-4
	)
	xMax := 10.0
	for _, p := range pts {
		xMax = max(xMax, float64(p.Samples))
	}
	xDec := math.Ceil(math.Log10(xMax))
	pw, ph := float64(width-left-right), float64(height-top-bott)
	x := func(n float64) float64 { return left + pw*math.Log10(max(n, 1))/xDec }
	y := func(e float64) float64 {
		return top + ph*(-math.Log10(max(e, yMin)))/(-math.Log10(yMin))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="13">%s</text>`+"\n", left, xmlEscape(title))
	// Axes and grid: decades.
	for d := 0.0; d <= xDec; d++ {
		px := x(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", px, top, px, height-bott)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px, height-bott+15, decade(d))
	}
	for d := 0.0; d >= math.Log10(yMin); d-- {
		py := y(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, py, width-right, py)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-5, py+4, decade(d))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="black"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">samples per load (N)</text>`+"\n", left+pw/2, height-12)
	fmt.Fprintf(&b, `<text x="16" y="%.0f" text-anchor="middle" transform="rotate(-90 16 %.0f)">|estimated − true share|, worst level</text>`+"\n", top+ph/2, top+ph/2)
	// The bound 1/√N.
	var path strings.Builder
	for i := 0; i <= 60; i++ {
		n := math.Pow(10, xDec*float64(i)/60)
		sep := "L"
		if i == 0 {
			sep = "M"
		}
		fmt.Fprintf(&path, "%s%.1f,%.1f ", sep, x(n), y(1/math.Sqrt(n)))
	}
	fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="black" stroke-dasharray="5,3"/>`+"\n", strings.TrimSpace(path.String()))
	// Points, a colour per image.
	colours := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
	var images []string
	for _, p := range pts {
		if !slices.Contains(images, p.Image) {
			images = append(images, p.Image)
		}
	}
	slices.Sort(images)
	for _, p := range pts {
		c := colours[slices.Index(images, p.Image)%len(colours)]
		fill, note := fmt.Sprintf(`fill="%s" fill-opacity="0.7"`, c), ""
		if p.SameLine {
			fill, note = fmt.Sprintf(`fill="none" stroke="%s"`, c), " (same-line follower)"
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" %s><title>%s %#x %s: N %d, estimate %.3f, truth %.3f%s</title></circle>`+"\n",
			x(float64(p.Samples)), y(p.Error), fill, xmlEscape(p.Image), p.PC, p.Level, p.Samples, p.Est, p.Truth, note)
	}
	// Legend.
	lx := width - right + 12
	for i, im := range images {
		ly := top + 10 + 18*i
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx, ly, colours[i%len(colours)], lx+10, ly+4, xmlEscape(im))
	}
	ly := top + 10 + 18*len(images)
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="none" stroke="black"/><text x="%d" y="%d">same-line</text><text x="%d" y="%d">follower</text>`+"\n", lx, ly, lx+10, ly+4, lx+10, ly+16)
	ly += 30
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black" stroke-dasharray="5,3"/><text x="%d" y="%d">1/√N</text>`+"\n", lx-6, ly, lx+6, ly, lx+10, ly+4)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10">errors under 10⁻⁴</text><text x="%d" y="%d" font-size="10">drawn at 10⁻⁴</text>`+"\n", lx-6, ly+22, lx-6, ly+35)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func decade(d float64) string {
	switch d {
	case 0:
		return "1"
	case 1:
		return "10"
	}
	return fmt.Sprintf("1e%.0f", d)
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// WriteAccuracyText summarizes the accuracy points pts of a report whose
// plot is in file: how many loads lie within their stated error, and the
// median and worst error per decade of samples beside 1/sqrt(n).
func WriteAccuracyText(w io.Writer, pts []AccuracyPoint, file string) error {
	sum := Summarize(pts)
	fmt.Fprintf(w, "%d loads with ground truth: %d within 2 stated standard deviations of the truth, %d within 1/sqrt(n); %d same-line followers apart (hollow); plot in %s\n",
		sum.Points, sum.WithinTwoSD, sum.WithinSqrt, sum.SameLine, file)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "samples\tloads\tmedian error\tworst error\t1/sqrt(n)")
	for lo := uint64(1); lo <= pts[len(pts)-1].Samples; lo *= 10 {
		var errs []float64
		for _, p := range pts {
			if !p.SameLine && p.Samples >= lo && p.Samples < 10*lo {
				errs = append(errs, p.Error)
			}
		}
		if len(errs) == 0 {
			continue
		}
		slices.Sort(errs)
		fmt.Fprintf(tw, "%d-%d\t%d\t%.4f\t%.4f\t%.4f-%.4f\n", lo, 10*lo-1, len(errs), errs[len(errs)/2], errs[len(errs)-1], 1/math.Sqrt(float64(10*lo)), 1/math.Sqrt(float64(lo)))
	}
	return tw.Flush()
}
