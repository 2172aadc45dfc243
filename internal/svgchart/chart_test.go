package svgchart

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

func TestNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{0.7: 1, 961: 1000, 14.93: 20, 3: 5, 2e6: 2e6, 0: 1} {
		if got := NiceCeil(v); math.Abs(got-want) > 1e-9*want {
			t.Errorf("NiceCeil(%g) = %g, want %g", v, got, want)
		}
	}
}

// TestAxisFormat: an axis's Format labels its ticks, escaped, and the
// document stays well-formed XML.
func TestAxisFormat(t *testing.T) {
	c := New()
	xa := Axis{Min: 0, Max: 50, Format: func(v float64) string { return fmt.Sprintf("<%gs>", v) }}
	p := c.Panel(0, "t", "x", "y", xa, Axis{Min: 0, Max: 1})
	p.Line([]XY{{0, 0}, {50, 1}}, "#000")
	var b strings.Builder
	if err := c.Write(&b, "title & more", "note"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "&lt;10s&gt;") {
		t.Errorf("ticks not formatted:\n%s", b.String())
	}
	d := xml.NewDecoder(strings.NewReader(b.String()))
	for {
		_, err := d.Token()
		if err != nil {
			if err != io.EOF {
				t.Fatalf("not well-formed: %v", err)
			}
			break
		}
	}
}
