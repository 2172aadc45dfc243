package trend

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"text/tabwriter"
	"time"

	"dcpi/internal/svgchart"
)

// WriteText prints one table per series, the whole selection's first:
// a line naming the measure with its samples and share over the range,
// then per epoch its number, start, end, length, samples, share of the
// epoch's selected samples and samples per second. Times are local
// (TZ); an open epoch's end is "open" (its length runs to now), and an
// epoch without recorded times shows "-" for them and its rate.
func (t *Trend) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Trend of %s samples per epoch: %s\n", t.Event, t.span())
	if len(t.Epochs) == 0 {
		fmt.Fprintln(bw, "no epochs selected")
		return bw.Flush()
	}
	all := append([]Series{t.Total}, t.Series...)
	for i, s := range all {
		fmt.Fprintln(bw)
		if i == 0 {
			fmt.Fprintf(bw, "%s: %d samples\n", s.Measure, s.Samples)
		} else {
			fmt.Fprintf(bw, "%s: %d samples, %.2f%% of the selection\n", s.Measure, s.Samples, s.Share)
		}
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "epoch\tstart\tend\tseconds\tsamples\tshare %\trate/s\t")
		for j, e := range t.Epochs {
			p := s.Points[j]
			start, end, secs, rate := "-", "-", "-", "-"
			if !e.Start.IsZero() {
				start = e.Start.In(time.Local).Format("2006-01-02 15:04:05")
			}
			switch {
			case e.Open:
				end = "open"
			case !e.End.IsZero():
				end = e.End.In(time.Local).Format("15:04:05")
			}
			if sec := e.Seconds(); sec > 0 {
				secs = strconv.FormatFloat(sec, 'f', 1, 64)
			}
			if !math.IsNaN(float64(p.Rate)) {
				rate = rateText(float64(p.Rate))
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%.2f\t%s\t\n", e.Number, start, end, secs, p.Samples, p.Share, rate)
		}
		tw.Flush()
	}
	if t.Top > 0 && len(t.Series) == 0 {
		fmt.Fprintln(bw, "\nno procedure has samples in the selection")
	}
	return bw.Flush()
}

// rateText prints a rate with three or more significant digits.
func rateText(v float64) string {
	switch {
	case v == 0 || v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// span names the epochs and the time they cover.
func (t *Trend) span() string {
	if len(t.Epochs) == 0 {
		return "no epochs"
	}
	first, last := t.Epochs[0], t.Epochs[len(t.Epochs)-1]
	s := fmt.Sprintf("epochs %d-%d", first.Number, last.Number)
	if len(t.Epochs) == 1 {
		s = fmt.Sprintf("epoch %d", first.Number)
	}
	if !t.Timed() {
		return s
	}
	s += fmt.Sprintf(", %s to %s", first.Start.In(time.Local).Format("2006-01-02 15:04:05"), last.End.In(time.Local).Format("15:04:05 MST"))
	if last.Open {
		s += fmt.Sprintf(" (epoch %d open)", last.Number)
	}
	return s
}

// WriteJSON writes t as indented JSON.
func (t *Trend) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}

// Plot says what the series' panel of the chart draws.
type Plot string

// The chart's y values for the series.
const (
	PlotRate  Plot = "rate"  // samples per second of each epoch (samples when the epochs' times are not known)
	PlotShare Plot = "share" // percentage of each epoch's selected samples
)

// ParsePlot checks a Plot as given ("" is PlotRate).
func ParsePlot(s string) (Plot, error) {
	switch Plot(s) {
	case "", PlotRate:
		return PlotRate, nil
	case PlotShare:
		return PlotShare, nil
	}
	return "", fmt.Errorf("plot %q: want rate or share", s)
}

// palette colours the series, in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// WriteSVG draws the trend as an SVG chart of two panels: the whole
// selection's rate on the left, the series on the right (their rate, or
// their share with PlotShare), one path each. An epoch is a step: its
// value held from its start to its end, since its samples have no finer
// time. Without every epoch's times the x axis is the epochs in order and
// the values are samples.
func (t *Trend) WriteSVG(w io.Writer, plot Plot) error {
	timed := t.Timed()
	var x0 time.Time
	if timed {
		x0 = t.Epochs[0].Start
	}
	// span is epoch i's [from, to) on the x axis.
	span := func(i int) (float64, float64) {
		if !timed {
			return float64(i), float64(i + 1)
		}
		return t.Epochs[i].Start.Sub(x0).Seconds(), t.Epochs[i].End.Sub(x0).Seconds()
	}
	xa := svgchart.Axis{Min: 0, Max: 1}
	xlabel := "epoch"
	if len(t.Epochs) > 0 {
		_, xa.Max = span(len(t.Epochs) - 1)
	}
	if timed {
		xlabel = "time (" + x0.In(time.Local).Format("MST") + ")"
		xa.Format = func(v float64) string {
			return x0.Add(time.Duration(v * float64(time.Second))).In(time.Local).Format("15:04:05")
		}
	} else {
		xa.Format = func(v float64) string {
			i := int(v)
			if float64(i) != v || i >= len(t.Epochs) {
				return ""
			}
			return strconv.FormatUint(t.Epochs[i].Number, 10)
		}
	}
	value := func(p Point, share bool) float64 {
		switch {
		case share:
			return p.Share
		case timed:
			return float64(p.Rate)
		}
		return float64(p.Samples)
	}
	steps := func(s Series, share bool) ([]svgchart.XY, float64) {
		var pts []svgchart.XY
		var top float64
		for i, p := range s.Points {
			from, to := span(i)
			v := value(p, share)
			top = max(top, v)
			pts = append(pts, svgchart.XY{X: from, Y: v}, svgchart.XY{X: to, Y: v})
		}
		return pts, top
	}
	unit := "samples/s"
	if !timed {
		unit = "samples"
	}
	c := svgchart.New()
	tp, top := steps(t.Total, false)
	lp := c.Panel(0, "all selected samples", xlabel, t.Event+" "+unit, xa, svgchart.Axis{Min: 0, Max: svgchart.NiceCeil(top)})
	lp.Line(tp, "#000")

	share := plot == PlotShare
	sunit := unit
	if share {
		sunit = "% of the selection"
	}
	var lines [][]svgchart.XY
	top = 0
	for _, s := range t.Series {
		pts, m := steps(s, share)
		lines = append(lines, pts)
		top = max(top, m)
	}
	title := "the measures"
	if t.Top > 0 {
		title = fmt.Sprintf("the top %d procedures", t.Top)
	}
	ya := svgchart.Axis{Min: 0, Max: svgchart.NiceCeil(top)}
	rp := c.Panel(1, title, xlabel, t.Event+" "+sunit, xa, ya)
	for i, pts := range lines {
		color := palette[i%len(palette)]
		rp.Line(pts, color)
		rp.Label(svgchart.XY{X: 0, Y: ya.Max * (0.95 - 0.06*float64(i))}, shortName(t.Series[i].Measure), color)
	}
	return c.Write(w, fmt.Sprintf("dcpi trend: %s samples per epoch", t.Event), t.span())
}

// shortName labels a series in the chart's legend.
func shortName(m Measure) string {
	switch {
	case m.Kind == KindProcedure && m.Image != "":
		return m.Value + " (" + path.Base(m.Image) + ")"
	case m.Kind == KindSelection:
		return "all"
	}
	return m.Value
}
