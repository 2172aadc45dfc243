// Package svgchart writes small SVG charts: a row of panels, each with
// its own axes (linear or log10), lines, dots and labels. Plain SVG 1.1,
// no scripts, so a browser or an image viewer shows it. The tools that
// write figures into docs share it (the ProfileMe figures, the load
// generator's series).
package svgchart

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Chart is a row of panels being drawn.
type Chart struct {
	panels []*Panel
	body   strings.Builder
}

// XY is a point in a panel's coordinates.
type XY struct{ X, Y float64 }

// Axis is a panel axis over [Min, Max], linear or log10.
type Axis struct {
	Min, Max float64
	Log      bool
	// Format labels a tick (nil: the value, %.4g or %.0e): a time axis
	// labels seconds from an origin as clock times.
	Format func(float64) string
}

// NiceCeil rounds v up to 1, 2 or 5 times a power of ten, so that an
// axis's five steps fall on round numbers (1 for v <= 0).
func NiceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func (a Axis) frac(v float64) float64 {
	if a.Log {
		v, lo, hi := math.Log10(math.Max(v, a.Min)), math.Log10(a.Min), math.Log10(a.Max)
		return (v - lo) / (hi - lo)
	}
	return (v - a.Min) / (a.Max - a.Min)
}

// ticks are the axis's labelled values: the powers of ten of a log axis,
// five steps of a linear one.
func (a Axis) ticks() []float64 {
	var t []float64
	if a.Log {
		for v := a.Min; v <= a.Max*1.0001; v *= 10 {
			t = append(t, v)
		}
		return t
	}
	for i := range 6 {
		t = append(t, a.Min+(a.Max-a.Min)*float64(i)/5)
	}
	return t
}

const (
	panelW, panelH   = 420.0, 320.0
	marginL, marginT = 60.0, 50.0
	marginB          = 50.0
)

// Panel is one plot area with its axes.
type Panel struct {
	c      *Chart
	x0, y0 float64 // top-left of the plot area
	xa, ya Axis
}

// New returns an empty chart.
func New() *Chart { return &Chart{} }

// Panel adds panel i (left to right) with its title, axis labels and
// axes.
func (c *Chart) Panel(i int, title, xlabel, ylabel string, xa, ya Axis) *Panel {
	p := &Panel{c: c, x0: marginL + float64(i)*(panelW+marginL), y0: marginT + 20, xa: xa, ya: ya}
	c.panels = append(c.panels, p)
	b := &c.body
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.0f" height="%.0f" fill="none" stroke="#000"/>`+"\n", p.x0, p.y0, panelW, panelH)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="13" text-anchor="middle">%s</text>`+"\n", p.x0+panelW/2, p.y0-8, html.EscapeString(title))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">%s</text>`+"\n", p.x0+panelW/2, p.y0+panelH+38, html.EscapeString(xlabel))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
		p.x0-42, p.y0+panelH/2, p.x0-42, p.y0+panelH/2, html.EscapeString(ylabel))
	for _, v := range xa.ticks() {
		x := p.x0 + xa.frac(v)*panelW
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000"/><text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`+"\n",
			x, p.y0+panelH, x, p.y0+panelH+5, x, p.y0+panelH+18, html.EscapeString(xa.label(v)))
	}
	for _, v := range ya.ticks() {
		y := p.y0 + (1-ya.frac(v))*panelH
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000"/><text x="%.1f" y="%.1f" font-size="11" text-anchor="end">%s</text>`+"\n",
			p.x0-5, y, p.x0, y, p.x0-7, y+4, html.EscapeString(ya.label(v)))
	}
	return p
}

func (a Axis) label(v float64) string {
	if a.Format != nil {
		return a.Format(v)
	}
	return tickLabel(v)
}

func tickLabel(v float64) string {
	if v >= 1e4 {
		return fmt.Sprintf("%.0e", v)
	}
	return fmt.Sprintf("%.4g", v)
}

func (p *Panel) at(v XY) (float64, float64) {
	return p.x0 + p.xa.frac(v.X)*panelW, p.y0 + (1-p.ya.frac(v.Y))*panelH
}

// Line draws a polyline through pts.
func (p *Panel) Line(pts []XY, color string) {
	if len(pts) < 2 {
		return
	}
	var d strings.Builder
	for i, v := range pts {
		x, y := p.at(v)
		op := "L"
		if i == 0 {
			op = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", op, x, y)
	}
	fmt.Fprintf(&p.c.body, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.TrimSpace(d.String()), color)
}

// Dot draws a point.
func (p *Panel) Dot(v XY, color string) {
	x, y := p.at(v)
	fmt.Fprintf(&p.c.body, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s" fill-opacity="0.7"/>`+"\n", x, y, color)
}

// Label writes text just above and right of v.
func (p *Panel) Label(v XY, text, color string) {
	x, y := p.at(v)
	fmt.Fprintf(&p.c.body, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`+"\n", x+4, y-4, color, html.EscapeString(text))
}

// Write emits the SVG document with a title above and a note below.
func (c *Chart) Write(w io.Writer, title, note string) error {
	width := marginL + float64(max(len(c.panels), 1))*(panelW+marginL)
	height := marginT + 20 + panelH + marginB + 30
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%.1f" y="24" font-size="15" text-anchor="middle">%s</text>`+"\n", width/2, html.EscapeString(title))
	bw.WriteString(c.body.String())
	fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`+"\n", width/2, height-10, html.EscapeString(note))
	bw.WriteString("</svg>\n")
	return bw.Flush()
}
