package web

import (
	"encoding/xml"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"dcpi/analysis"
	"dcpi/storage"
	"dcpi/wire"
)

// trendFleet is fleet's profile in epoch 1 and epoch 3 (a third of it),
// with epoch 2 empty, and the three epochs' times: 10 minutes each, the
// last open.
func trendFleet() (*analysis.MemSource, []Epoch) {
	m := fleet(false)
	a := wire.MustParseImageKey("sha256:" + strings.Repeat("01", 32)) // fleet's /bin/a
	for off := uint64(0x100); off < 0x200; off += 4 {
		m.Add(storage.Record{Epoch: 3, Image: a, Offset: off, Host: "alpha0", Count: 3})
	}
	t0 := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	return m, []Epoch{
		{Number: 1, State: "sealed", Start: t0, End: t0.Add(10 * time.Minute)},
		{Number: 2, State: "sealed", Start: t0.Add(10 * time.Minute), End: t0.Add(20 * time.Minute)},
		{Number: 3, State: "open", Start: t0.Add(20 * time.Minute)},
	}
}

var trendRowRE = regexp.MustCompile(`<tr class="row" data-epoch="(\d+)" data-samples="(\d+)">`)

// TestTrendPage: the trend page draws the chart inline — well-formed SVG,
// one path per series and one for the total — and has a row per epoch,
// the empty epoch's with 0 samples; the measures and options given are
// kept, and bad ones refused with 400.
func TestTrendPage(t *testing.T) {
	src, eps := trendFleet()
	s := New(&testBackend{src: src, hosts: []string{"alpha0", "alpha1"}, epochs: eps}, t.Logf)
	for _, c := range []struct {
		url    string
		series int
	}{{"/trend", 4}, {"/trend?top=2&plot=share", 2}, {"/trend?measure=procedure=hot&measure=image=/bin/b", 2}} {
		code, body := get(t, s, c.url)
		if code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", c.url, code, body)
		}
		i, j := strings.Index(body, "<svg"), strings.Index(body, "</svg>")
		if i < 0 || j < i {
			t.Fatalf("%s: no inline chart", c.url)
		}
		paths, err := countPaths(body[i : j+len("</svg>")])
		if err != nil || paths != c.series+1 {
			t.Errorf("%s: %d paths (%v), want %d", c.url, paths, err, c.series+1)
		}
		rows := trendRowRE.FindAllStringSubmatch(body, -1)
		if len(rows) != 3 || rows[1][1] != "2" || rows[1][2] != "0" || rows[2][2] != "192" {
			t.Errorf("%s: epoch rows %v, want 1-3 with epoch 2 empty and epoch 3 192 samples", c.url, rows)
		}
		if !strings.Contains(body, `id="nav-trend" href="/trend" class="on"`) {
			t.Errorf("%s: the navigation does not mark the trend page", c.url)
		}
	}
	for url, want := range map[string]string{
		"/trend?plot=pie":             `plot &#34;pie&#34;: want rate or share`,
		"/trend?measure=host=alpha0":  "want procedure=NAME, image=PATH or selection",
		"/trend?top=0":                "top=&#34;0&#34;: want a whole number &gt;= 1",
		"/trend?event=cycles,imiss":   "a trend counts one event",
		"/trend?host=nope":            "no samples for host nope",
		"/trend?measure=procedure=":   "empty procedure",
		"/trend?measure=a&measure=%z": "malformed query string",
	} {
		code, body := get(t, s, url)
		if code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want 400 with %q\n%s", url, code, want, body)
		}
	}
	// Without epoch records, the page asks for the epochs by their
	// parameters' names.
	s = New(&testBackend{src: src, hosts: []string{"alpha0"}, epochs: []Epoch{}}, t.Logf)
	if code, body := get(t, s, "/trend"); code != http.StatusBadRequest || !strings.Contains(body, "give the epochs with epoch= or epochs=") {
		t.Errorf("no epochs: %d\n%s", code, body)
	}
}

// countPaths parses doc as XML and counts its path elements.
func countPaths(doc string) (int, error) {
	d := xml.NewDecoder(strings.NewReader(doc))
	n := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			n++
		}
	}
}

var diffBoxRE = regexp.MustCompile(`data-proc="([^"]*)" data-total="(\d+)" data-delta="(-?[\d.]+)"`)
var flameBoxRE = regexp.MustCompile(`data-proc="([^"]*)" data-total="(\d+)" data-depth`)

// TestDiffFlame: the differential flame graph lays out B's call tree as
// the flame graph of B alone does (the same boxes, the same counts), the
// root's change is 0, and each box's change is its share in B less its
// share in A.
func TestDiffFlame(t *testing.T) {
	s := New(&testBackend{src: fleet(true), hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	code, body := get(t, s, "/diffflame?a=host=alpha0&b=host=alpha1")
	if code != http.StatusOK {
		t.Fatalf("%d\n%s", code, body)
	}
	diff := diffBoxRE.FindAllStringSubmatch(body, -1)
	_, flame := get(t, s, "/flame?host=alpha1")
	boxes := flameBoxRE.FindAllStringSubmatch(flame, -1)
	if len(diff) == 0 || len(diff) != len(boxes) {
		t.Fatalf("%d boxes, the flame graph of B %d", len(diff), len(boxes))
	}
	for i := range diff {
		if diff[i][1] != boxes[i][1] || diff[i][2] != boxes[i][2] {
			t.Errorf("box %d: %s %s, B's flame graph %s %s", i, diff[i][1], diff[i][2], boxes[i][1], boxes[i][2])
		}
	}
	if strings.Contains(body, "ZgotmplZ") {
		t.Errorf("a box's colour was refused by the template's CSS escaping")
	}
	if diff[0][3] != "0.00" {
		t.Errorf("the root's change %s, want 0.00", diff[0][3])
	}
	// The same set on both sides changes nothing.
	_, same := get(t, s, "/diffflame?a=host=alpha1&b=host=alpha1")
	for _, m := range diffBoxRE.FindAllStringSubmatch(same, -1) {
		if m[3] != "0.00" {
			t.Errorf("A = B: %s changes by %s", m[1], m[3])
		}
	}
	// Without a or b: the first two hosts; one alone is refused.
	if code, _ := get(t, s, "/diffflame"); code != http.StatusOK {
		t.Errorf("/diffflame: %d", code)
	}
	if code, body := get(t, s, "/diffflame?a=host=alpha0"); code != http.StatusBadRequest || !strings.Contains(body, "give both selections") {
		t.Errorf("a alone: %d", code)
	}
	// The diff page links its differential flame graph.
	if _, body := get(t, s, "/diff?a=host=alpha0&b=host=alpha1"); !strings.Contains(body, `href="/diffflame?a=host%3Dalpha0&amp;b=host%3Dalpha1"`) {
		t.Errorf("the diff page does not link the differential flame graph")
	}
}

// TestDeltaColor: growth is red, shrinkage blue, none pale grey, and the
// largest change the deepest.
func TestDeltaColor(t *testing.T) {
	for _, c := range []struct {
		delta, max float64
		want       string
	}{{0, 5, "hsl(0, 0%, 90%)"}, {5, 5, "hsl(0, 90%, 55%)"}, {-5, 5, "hsl(215, 90%, 55%)"}, {1, 0, "hsl(0, 0%, 90%)"}} {
		if got := deltaColor(c.delta, c.max).String(); got != c.want {
			t.Errorf("deltaColor(%g, %g) = %s, want %s", c.delta, c.max, got, c.want)
		}
	}
}
