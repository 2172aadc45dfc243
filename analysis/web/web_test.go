package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/analysis/pprofexport"
	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// testBackend is a Backend over an analysis.Source for the handlers'
// tests: hosts and events parsed, the rest refused. (dcpi's own Backend,
// over the tools' flag parsing, is tested through the browser in
// cmd/dcpi.)
type testBackend struct {
	src    analysis.Source
	hosts  []string
	epochs []Epoch // nil: epoch 1, sealed, without times
	panic  bool
	live   bool
}

func (b *testBackend) Source() analysis.Source { return b.src }
func (b *testBackend) Where() string           { return "the test source" }
func (b *testBackend) Live() bool              { return b.live }

func (b *testBackend) Select(ctx context.Context, f Filters) (Selection, error) {
	if b.panic {
		panic("backend bug")
	}
	var sel Selection
	sel.Filter.Hosts = f.Hosts
	for _, e := range f.Events {
		n, err := analysis.ParseEvent(e)
		if err != nil {
			return sel, fmt.Errorf("event: %w", errors.Unwrap(err))
		}
		sel.Events = append(sel.Events, n)
	}
	if f.Epochs != nil || f.EpochRanges != nil || f.Images != nil || f.PIDs != nil || f.Labels != nil || f.From != "" || f.To != "" {
		return sel, errors.New("the test backend takes host, event and since only")
	}
	if f.Since != "" {
		sel.Covered = "time range: the last " + f.Since
	}
	return sel, nil
}

func (b *testBackend) Set(ctx context.Context, base Selection, spec string) (analysis.SampleSet, error) {
	h, ok := strings.CutPrefix(spec, "host=")
	if !ok {
		return analysis.SampleSet{}, fmt.Errorf("set %q: the test backend takes host=H", spec)
	}
	q := base.Filter
	q.Hosts = []string{h}
	return analysis.SampleSet{Name: spec, Filter: q}, nil
}

func (b *testBackend) Hint(ctx context.Context, sel Selection) string {
	for _, h := range sel.Filter.Hosts {
		if !slices.Contains(b.hosts, h) {
			return "no samples for host " + h
		}
	}
	return ""
}

func (b *testBackend) Files() symbolize.ImageFinder { return nil }
func (b *testBackend) SourceFile(string) ([]byte, error) {
	return nil, errors.New("no sources")
}
func (b *testBackend) CalcPeriods(context.Context, []string) (map[string]map[uint8]float64, error) {
	return nil, errors.New("no periods")
}

// Groups groups by host only: the test backend has no labels.
func (b *testBackend) Groups(ctx context.Context, sel Selection, label string, limit int) (*report.GroupTable, error) {
	if label != "host" {
		return nil, fmt.Errorf("--by %s: the test backend groups by host only", label)
	}
	all, err := report.Prof(ctx, b.src, report.ProfQuery{Filter: sel.Filter, Events: sel.Events, By: report.ByImage})
	if err != nil {
		return nil, err
	}
	var rows []report.GroupRow
	for _, h := range b.hosts {
		q := report.ProfQuery{Filter: sel.Filter, Events: sel.Events, By: report.ByImage}
		q.Filter.Hosts = []string{h}
		t, err := report.Prof(ctx, b.src, q)
		if err != nil {
			return nil, err
		}
		row := report.GroupRow{Value: h, Hosts: []string{h}, Counts: make([]uint64, len(all.Columns))}
		for i, c := range all.Columns {
			for _, tc := range t.Columns {
				if tc.Event == c.Event {
					row.Counts[i] = tc.Total
				}
			}
		}
		rows = append(rows, row)
	}
	g := report.NewGroupTable(label, all.Columns, rows)
	g.Limit(limit)
	return g, nil
}

// Report: the test backend has value samples, and neither ProfileMe
// samples nor path profiles.
func (b *testBackend) Report(ctx context.Context, r ToolReport, sel Selection, w io.Writer) error {
	switch r.Tool {
	case "values":
		fmt.Fprintf(w, "hot loads (%s view) of hosts %v\n", r.View, sel.Filter.Hosts)
		return nil
	case "me":
		return errors.New("no ProfileMe samples selected (were the nodes run with --profileme?)")
	}
	return errors.New("the test source holds no path profiles")
}

func (b *testBackend) Pprof(ctx context.Context, sel Selection) (*profile.Profile, error) {
	return pprofexport.Pprof(ctx, b.src, pprofexport.PprofQuery{Filter: sel.Filter, Events: sel.Events, Flat: true})
}
func (b *testBackend) Epochs(context.Context) ([]Epoch, error) {
	if b.epochs != nil {
		return b.epochs, nil
	}
	return []Epoch{{Number: 1, State: "sealed", Acked: b.hosts}}, nil
}
func (b *testBackend) Hosts(context.Context) ([]Host, error) {
	var hs []Host
	for _, h := range b.hosts {
		hs = append(hs, Host{Name: h})
	}
	return hs, nil
}

// fleet is a two-host profile of two images, with stacks when stacks is
// set.
func fleet(stacks bool) *analysis.MemSource {
	m := analysis.NewMemSource()
	// Well-formed keys: the JSON of the reports (the API) writes them.
	a := wire.MustParseImageKey("sha256:" + strings.Repeat("01", 32))
	b := wire.MustParseImageKey("sha256:" + strings.Repeat("02", 32))
	m.PutImage(&wire.ImageRecord{Version: wire.Version, Key: a, Path: "/bin/a",
		Symbols: []wire.Symbol{{Name: "main", Addr: 0, Size: 0x100}, {Name: "hot", Addr: 0x100, Size: 0x100}}})
	m.PutImage(&wire.ImageRecord{Version: wire.Version, Key: b, Path: "/bin/b",
		Symbols: []wire.Symbol{{Name: "main", Addr: 0, Size: 0x100}, {Name: "lookup", Addr: 0x100, Size: 0x100}}})
	for i, h := range []string{"alpha0", "alpha1"} {
		for off := uint64(0); off < 0x200; off += 4 {
			n := off/4 + uint64(i)
			m.Add(storage.Record{Epoch: 1, Event: 0, Image: a, Offset: off, Host: h, Count: n})
			m.Add(storage.Record{Epoch: 1, Event: 0, Image: b, Offset: off, Host: h, Count: n / 3})
			m.Add(storage.Record{Epoch: 1, Event: 2, Image: b, Offset: off, Host: h, Count: 1})
			if stacks && n > 0 {
				// hot at off, called from main of a.
				m.AddStack(1, 0, h, 0, false, []wire.Frame{{Image: a, Offset: off}, {Image: a, Offset: 0x10}}, n)
			}
		}
	}
	return m
}

func get(t *testing.T, s http.Handler, url string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", url, nil))
	return w.Code, w.Body.String()
}

var rowRE = regexp.MustCompile(`(?s)<tr class="row" data-proc="([^"]*)" data-image="([^"]*)">(.*?)</tr>`)
var countRE = regexp.MustCompile(`<td class="num count" data-event="[^"]*">(\d+)</td>`)

// TestTopPageIsProf: the hot procedures page shows report.Prof's rows,
// in its order, with its counts, under the page's filters and limit.
func TestTopPageIsProf(t *testing.T) {
	src := fleet(false)
	s := New(&testBackend{src: src, hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	for _, c := range []struct {
		url string
		q   report.ProfQuery
	}{
		{"/", report.ProfQuery{Limit: DefaultTopRows}},
		{"/?host=alpha1&event=cycles", report.ProfQuery{Filter: storage.Query{Hosts: []string{"alpha1"}}, Events: []uint8{0}, Limit: DefaultTopRows}},
		{"/?limit=2&event=imiss,cycles", report.ProfQuery{Events: []uint8{2, 0}, Limit: 2}},
		{"/?by=image", report.ProfQuery{By: report.ByImage, Limit: DefaultTopRows}},
	} {
		code, body := get(t, s, c.url)
		if code != http.StatusOK {
			t.Fatalf("%s: status %d\n%s", c.url, code, body)
		}
		want, err := report.Prof(t.Context(), src, c.q)
		if err != nil {
			t.Fatal(err)
		}
		rows := rowRE.FindAllStringSubmatch(body, -1)
		if len(rows) != len(want.Rows) || len(rows) == 0 {
			t.Fatalf("%s: %d rows, Prof %d", c.url, len(rows), len(want.Rows))
		}
		for i, r := range rows {
			w := want.Rows[i]
			var counts []string
			for _, m := range countRE.FindAllStringSubmatch(r[3], -1) {
				counts = append(counts, m[1])
			}
			var wc []string
			for _, n := range w.Counts {
				wc = append(wc, strconv.FormatUint(n, 10))
			}
			if r[1] != w.Procedure || r[2] != w.Image || !slices.Equal(counts, wc) {
				t.Errorf("%s row %d: %s %s %v; Prof: %s %s %v", c.url, i, r[1], r[2], counts, w.Procedure, w.Image, wc)
			}
		}
		if want.Omitted > 0 && !strings.Contains(body, fmt.Sprintf("[%d more]", want.Omitted)) {
			t.Errorf("%s: no line for the %d rows cut", c.url, want.Omitted)
		}
	}
	// The search keeps the rows naming it, procedure or image.
	_, body := get(t, s, "/?q=LOOK")
	rows := rowRE.FindAllStringSubmatch(body, -1)
	if len(rows) != 1 || rows[0][1] != "lookup" {
		t.Errorf("search for LOOK: %d rows %v", len(rows), rows)
	}
	_, body = get(t, s, "/?q=/bin/b")
	if rows := rowRE.FindAllStringSubmatch(body, -1); len(rows) != 2 {
		t.Errorf("search for /bin/b: %d rows, want b's main and lookup", len(rows))
	}
}

// TestBadInput: every malformed or unknown input gets its page with the
// reason and status 400 (404 for no page), never a 500 or a trace; a
// panic in the backend is a 500 that shows no trace.
func TestBadInput(t *testing.T) {
	s := New(&testBackend{src: fleet(false), hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	for _, c := range []struct {
		url  string
		code int
		want string
	}{
		{"/?event=bogus", 400, `unknown event &#34;bogus&#34;`},
		{"/?host=alpha9", 400, "nothing matches the filters: no samples for host alpha9"},
		{"/?foo=1", 400, `unknown parameter &#34;foo&#34;`},
		{"/?q=a&q=b", 400, "q: given 2 times"},
		{"/?since=1h&since=2h", 400, "since: given 2 times"},
		{"/flame?from=09:00&from=10:00", 400, "from: given 2 times"},
		{"/?%zz", 400, "malformed query string"},
		{"/?label=rack", 400, `label &#34;rack&#34;: want KEY=VALUE`},
		{"/?limit=-1", 400, "limit=&#34;-1&#34;: want a whole number &gt;= 0"},
		{"/?by=x-y", 400, "by=&#34;x-y&#34;: want procedure, image, or a label"},
		{"/?by=host&q=hot", 400, "q: searches procedures; not with by=host"},
		{"/diff?a=host=alpha0&b=host=alpha1&by=host", 400, "the diff compares procedures or images, not labels"},
		{"/list", 400, "give a procedure"},
		{"/flame?view=up", 400, `view=&#34;up&#34;: want flame or icicle`},
		{"/flame?min=200", 400, "min=&#34;200&#34;: want a number from 0 to 100"},
		{"/diff?a=host=alpha0", 400, "give both selections"},
		{"/diff?a=epoch=1&b=host=alpha1", 400, "a: set &#34;epoch=1&#34;: the test backend takes host=H"},
		{"/diff?a=host=alpha0&b=host=alpha1&z=0", 400, "z=&#34;0&#34;"},
		{"/pprof?event=bogus", 400, `unknown event &#34;bogus&#34;`},
		{"/nope", 404, "no page /nope"},
	} {
		code, body := get(t, s, c.url)
		if code != c.code || !strings.Contains(body, c.want) || !strings.Contains(body, `id="error"`) {
			t.Errorf("%s: status %d, want %d with %q:\n%s", c.url, code, c.code, c.want, body)
		}
	}
	p := New(&testBackend{src: fleet(false), panic: true}, t.Logf)
	code, body := get(t, p, "/")
	if code != 500 || strings.Contains(body, "goroutine") || strings.Contains(body, "backend bug") {
		t.Errorf("a panicking backend: status %d, body %q", code, body)
	}
}

// TestTimeRange: a page given a time range says what it covered, keeps
// the range in its form and its links.
func TestTimeRange(t *testing.T) {
	s := New(&testBackend{src: fleet(false), hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	for _, page := range []string{"/", "/flame", "/diff"} {
		code, body := get(t, s, page+"?since=2h")
		if code != 200 || !strings.Contains(body, `<p class="covered" id="covered">time range: the last 2h</p>`) ||
			!strings.Contains(body, `name="since" value="2h"`) || !strings.Contains(body, `href="/epochs?since=2h"`) {
			t.Errorf("%s?since=2h: status %d, no covered line, form value or link:\n%s", page, code, body)
		}
	}
	if _, body := get(t, s, "/"); strings.Contains(body, `id="covered"`) {
		t.Errorf("a page without a range says what one covered:\n%s", body)
	}
}

// TestFlame: with stacks the graph is the call tree (root the stacks'
// total, the callee above its caller); without, the flat profile's
// shares, marked as such.
func TestFlame(t *testing.T) {
	s := New(&testBackend{src: fleet(true), hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	code, body := get(t, s, "/flame")
	if code != 200 {
		t.Fatalf("status %d\n%s", code, body)
	}
	if strings.Contains(body, `id="flat"`) {
		t.Errorf("stacks recorded, yet the page says flat")
	}
	box := regexp.MustCompile(`data-proc="([^"]*)" data-total="(\d+)" data-depth="(\d+)"`)
	got := map[string]string{}
	for _, m := range box.FindAllStringSubmatch(body, -1) {
		got[m[3]+" "+m[1]] = m[2]
	}
	ct, err := report.Tree(t.Context(), fleet(true), report.TreeQuery{TopDown: true})
	if err != nil {
		t.Fatal(err)
	}
	tree := ct.Root
	want := map[string]string{"0 [all]": strconv.FormatUint(tree.Total, 10), "1 main": strconv.FormatUint(tree.Total, 10)}
	for _, c := range tree.Children[0].Children {
		want["2 "+c.Proc.Procedure] = strconv.FormatUint(c.Total, 10)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("flame boxes %v, want %v", got, want)
	}
	s = New(&testBackend{src: fleet(false), hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	_, body = get(t, s, "/flame?view=icicle")
	if !strings.Contains(body, `id="flat"`) || !strings.Contains(body, `data-proc="hot"`) {
		t.Errorf("no stacks: want the flat profile, marked:\n%s", body)
	}
}

// TestFlameLayout: boxes are their share of the root, children side by
// side within their parent, small ones left out.
func TestFlameLayout(t *testing.T) {
	leaf := func(name string, n uint64) *report.TreeNode {
		return &report.TreeNode{Proc: report.StackProc{Procedure: name}, Total: n, Self: n}
	}
	root := &report.TreeNode{Proc: report.StackProc{Procedure: "[all]"}, Total: 1000, Children: []*report.TreeNode{
		{Proc: report.StackProc{Procedure: "main"}, Total: 900, Children: []*report.TreeNode{leaf("a", 600), leaf("b", 299), leaf("tiny", 1)}},
		leaf("other", 100),
	}}
	boxes, depth := flameLayout(root, 0.01, 10)
	if depth != 2 {
		t.Errorf("depth %d, want 2", depth)
	}
	want := []string{"0 [all] 0.000 1.000", "1 main 0.000 0.900", "2 a 0.000 0.600", "2 b 0.600 0.299", "1 other 0.900 0.100"}
	var got []string
	for _, b := range boxes {
		got = append(got, fmt.Sprintf("%d %s %.3f %.3f", b.Depth, b.Proc.Procedure, b.X, b.W))
	}
	if !slices.Equal(got, want) {
		t.Errorf("boxes %q, want %q", got, want)
	}
	if b, _ := flameLayout(root, 0, 1); len(b) != 3 {
		t.Errorf("maxDepth 1: %d boxes, want the root and its 2 children", len(b))
	}
	if b, d := flameLayout(&report.TreeNode{}, 0, 10); b != nil || d != 0 {
		t.Errorf("an empty tree: %v %d", b, d)
	}
}

// TestParseRequest: filters split on commas and repeat, blanks are no
// filter, links keep the filters, and the view's parameters stay apart.
func TestParseRequest(t *testing.T) {
	r, err := parseRequest("host=a,+b&host=c&epoch=&event=cycles&q=main&label=rack=r1", "q")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.filters.Hosts, []string{"a", "b", "c"}) || r.filters.Epochs != nil || r.filters.Labels["rack"] != "r1" {
		t.Errorf("filters %+v", r.filters)
	}
	if q, _ := r.one("q"); q != "main" {
		t.Errorf("q %q", q)
	}
	if got := r.with("proc", "x y"); got != "?event=cycles&host=a&host=b&host=c&label=rack%3Dr1&proc=x+y" {
		t.Errorf("link %q", got)
	}
	// A selector's commas are its own: select is repeated, never split.
	r, err = parseRequest(`select=service="db",version=~"1\\..*"&select=zone!=eu`)
	if err != nil || !slices.Equal(r.filters.Select, []string{`service="db",version=~"1\\..*"`, "zone!=eu"}) {
		t.Errorf("select: %q, %v", r.filters.Select, err)
	}
	var bad badRequest
	if _, err := parseRequest("q=1"); !errors.As(err, &bad) {
		t.Errorf("a parameter the page does not take: %v", err)
	}
}

// TestPprofDownload: the download is the selection's profile.
func TestPprofDownload(t *testing.T) {
	src := fleet(false)
	s := New(&testBackend{src: src, hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", "/pprof?host=alpha1&event=cycles", nil))
	if w.Code != 200 || !strings.Contains(w.Header().Get("Content-Disposition"), "dcpi.pb.gz") {
		t.Fatalf("status %d, headers %v", w.Code, w.Header())
	}
	p, err := profile.ParseData(w.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	for _, smp := range p.Sample {
		got += smp.Value[0]
	}
	want, err := report.Prof(t.Context(), src, report.ProfQuery{Filter: storage.Query{Hosts: []string{"alpha1"}}, Events: []uint8{0}})
	if err != nil {
		t.Fatal(err)
	}
	if got != int64(want.Columns[0].Total) {
		t.Errorf("download holds %d samples, the selection %d", got, want.Columns[0].Total)
	}
}

// TestPages: the diff, epochs and hosts pages show the backend's data.
func TestPages(t *testing.T) {
	src := fleet(false)
	s := New(&testBackend{src: src, hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	want, err := report.Diff(t.Context(), src, report.DiffQuery{A: analysis.SampleSet{Name: "host=alpha0", Filter: storage.Query{Hosts: []string{"alpha0"}}},
		B: analysis.SampleSet{Name: "host=alpha1", Filter: storage.Query{Hosts: []string{"alpha1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"/diff", "/diff?a=host=alpha0&b=host=alpha1"} { // the first two hosts by default
		code, body := get(t, s, url)
		rows := regexp.MustCompile(`data-proc="([^"]*)" data-significant="(true|false)">\s*<td class="mark">[^<]*</td><td class="num">(\d+)</td><td class="num">(\d+)</td>`).FindAllStringSubmatch(body, -1)
		if code != 200 || len(rows) != len(want.Rows) {
			t.Fatalf("%s: status %d, %d rows, want %d", url, code, len(rows), len(want.Rows))
		}
		for i, r := range rows {
			w := want.Rows[i]
			if r[1] != w.Procedure || r[2] != strconv.FormatBool(w.Significant) || r[3] != strconv.FormatUint(w.CountA, 10) || r[4] != strconv.FormatUint(w.CountB, 10) {
				t.Errorf("%s row %d: %v; Diff: %+v", url, i, r[1:], w)
			}
		}
	}
	if code, body := get(t, s, "/epochs"); code != 200 || !strings.Contains(body, `data-epoch="1" data-state="sealed"`) || !strings.Contains(body, "alpha0 alpha1") {
		t.Errorf("epochs page: %d\n%s", code, body)
	}
	merged := New(&testBackend{src: fleet(false), epochs: []Epoch{{Number: 3, MergedThrough: 26, State: "sealed"}}}, t.Logf)
	if code, body := get(t, merged, "/epochs"); code != 200 || !strings.Contains(body, `<a href="/?epoch=3">3-26</a></td><td>sealed (merged)</td>`) {
		t.Errorf("epochs page with a merged epoch: %d\n%s", code, body)
	}
	if code, body := get(t, s, "/hosts"); code != 200 || !strings.Contains(body, `data-host="alpha1"`) {
		t.Errorf("hosts page: %d\n%s", code, body)
	}
	if code, body := get(t, s, "/static/style.css"); code != 200 || !strings.Contains(body, ".flame") {
		t.Errorf("stylesheet: %d", code)
	}
}

var groupRE = regexp.MustCompile(`(?s)<tr class="group" data-value="([^"]*)">(.*?)</tr>`)

// TestTopPageByLabel: by=LABEL shows dcpi prof --by LABEL's table — the
// backend's groups, counts per event, each value a link to its hosts'
// hot procedures — and limit folds the rest into one row.
func TestTopPageByLabel(t *testing.T) {
	b := &testBackend{src: fleet(false), hosts: []string{"alpha0", "alpha1"}}
	s := New(b, t.Logf)
	code, body := get(t, s, "/?by=host&event=cycles")
	if code != http.StatusOK {
		t.Fatalf("status %d\n%s", code, body)
	}
	want, err := b.Groups(t.Context(), Selection{Events: []uint8{0}}, "host", DefaultTopRows)
	if err != nil {
		t.Fatal(err)
	}
	rows := groupRE.FindAllStringSubmatch(body, -1)
	if len(rows) != 2 || len(want.Rows) != 2 {
		t.Fatalf("%d group rows, backend %d:\n%s", len(rows), len(want.Rows), body)
	}
	for i, r := range rows {
		w := want.Rows[i]
		counts := countRE.FindAllStringSubmatch(r[2], -1)
		if r[1] != w.Value || len(counts) != 1 || counts[0][1] != strconv.FormatUint(w.Counts[0], 10) {
			t.Errorf("row %d: %s %v; backend %s %v", i, r[1], counts, w.Value, w.Counts)
		}
		if link := `href="/?event=cycles&amp;host=` + w.Value + `"`; !strings.Contains(r[2], link) {
			t.Errorf("row %d: no link %s in %s", i, link, r[2])
		}
	}
	if !strings.Contains(body, "<h1>Samples by host</h1>") {
		t.Error("no heading naming the label")
	}
	_, body = get(t, s, "/?by=host&limit=1")
	if n := len(groupRE.FindAllStringSubmatch(body, -1)); n != 1 || !strings.Contains(body, "[1 more values]") {
		t.Errorf("limit=1: %d rows, and the rest:\n%s", n, body)
	}
}

// TestGroupByLinks: the hot procedures page links the other groupings,
// keeping the filters, and marks the current one.
func TestGroupByLinks(t *testing.T) {
	s := New(&testBackend{src: fleet(false), hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	for url, want := range map[string]string{
		"/?event=cycles":        `group by: <b>procedure</b> · <a href="/?by=image&amp;event=cycles">image</a> · <a href="/?by=host&amp;event=cycles">host</a>`,
		"/?by=image":            `group by: <a href="/?">procedure</a> · <b>image</b> · <a href="/?by=host">host</a>`,
		"/?by=host&host=alpha0": `group by: <a href="/?host=alpha0">procedure</a> · <a href="/?by=image&amp;host=alpha0">image</a> · <b>host</b>`,
	} {
		if _, body := get(t, s, url); !strings.Contains(body, want) {
			t.Errorf("%s: want %s in\n%s", url, want, body)
		}
	}
}

// TestFlameZoomAndSearch: focus= draws the focused box's subtree the
// full width, its ancestors above it, its share still of the whole; a
// stale focus says so and zooms on what remains; q= marks the matching
// boxes and says what share of the samples they hold, counted over the
// whole call tree; every box links to the graph zoomed on it, and its
// listing keeps its image.
func TestFlameZoomAndSearch(t *testing.T) {
	src := fleet(true)
	s := New(&testBackend{src: src, hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	ct, err := report.Tree(t.Context(), src, report.TreeQuery{TopDown: true})
	if err != nil {
		t.Fatal(err)
	}
	root := ct.Root
	main := root.Children[0]
	var hot *report.TreeNode
	for _, c := range main.Children {
		if c.Proc.Procedure == "hot" {
			hot = c
		}
	}
	if hot == nil {
		t.Fatal("the fixture has no main → hot")
	}
	box := regexp.MustCompile(`<a class="fb([^"]*)" href="([^"]*)" data-list="([^"]*)" data-proc="([^"]*)" data-total="(\d+)" data-depth="(\d+)" data-image="[^"]*" data-pct="[^"]*" data-l="([^"]*)" data-w="([^"]*)"`)
	code, body := get(t, s, "/flame?focus=main%3Bhot&min=0")
	if code != 200 {
		t.Fatalf("status %d\n%s", code, body)
	}
	var drawn []string
	for _, m := range box.FindAllStringSubmatch(body, -1) {
		drawn = append(drawn, fmt.Sprintf("%s%s@%s:%s+%s", m[4], m[1], m[6], m[7], m[8]))
		if m[4] == "hot" && !strings.Contains(m[3], "in=%2Fbin%2Fa") {
			t.Errorf("hot's listing link %q does not keep its image", m[3])
		}
		if m[4] == "hot" && m[2] != "/flame?focus=main%3Bhot&amp;min=0" {
			t.Errorf("hot's zoom link %q", m[2])
		}
	}
	// The fixture's hot has no callees: main above it, hot the full width.
	if want := []string{"main anc@1:0+100", "hot@2:0+100"}; !slices.Equal(drawn, want) {
		t.Errorf("zoomed on main;hot: %v, want %v", drawn, want)
	}
	wantPct := fmt.Sprintf("%d samples, %.2f%% of all", hot.Total, 100*float64(hot.Total)/float64(root.Total))
	if !strings.Contains(body, `<span id="focused">Zoomed on <b>hot</b> (`+wantPct+`)`) || !strings.Contains(body, `id="unzoom" href="/flame?min=0"`) {
		t.Errorf("no zoom line %q with a way back:\n%s", wantPct, body)
	}
	_, body = get(t, s, "/flame?focus=main%3Bgone")
	if !strings.Contains(body, "No call path main → gone in this selection; zoomed on the nearest, main.") {
		t.Errorf("a stale focus is not explained:\n%s", body)
	}
	_, body = get(t, s, "/flame?q=HO&min=0")
	wantMatch := fmt.Sprintf(`data-pct="%.2f"`, 100*float64(hot.Total)/float64(root.Total))
	if !strings.Contains(body, `<span id="matched" `+wantMatch) || strings.Count(body, `class="fb match"`) != 1 {
		t.Errorf("q=HO: want one match holding %s:\n%s", wantMatch, body)
	}
	for url, want := range map[string]string{
		"/flame?color=blue": `color=&#34;blue&#34;: want image or procedure`,
		"/diffflame?a=host=alpha0&b=host=alpha1&view=icicle": "the differential flame graph is drawn as a flame graph",
	} {
		if code, body := get(t, s, url); code != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want 400 with %q", url, code, want)
		}
	}
	// Coloured by image, a legend names each image; by procedure, none.
	_, body = get(t, s, "/flame")
	if !strings.Contains(body, `id="legend"`) || !strings.Contains(body, `data-image="/bin/a"`) {
		t.Errorf("no image legend:\n%s", body)
	}
	if _, body = get(t, s, "/flame?color=procedure"); strings.Contains(body, `id="legend"`) {
		t.Error("color=procedure still draws the image legend")
	}
}

// TestEmptySource: a source with no samples yet says so, instead of
// blaming the filters.
func TestEmptySource(t *testing.T) {
	s := New(&testBackend{src: analysis.NewMemSource()}, t.Logf)
	for _, page := range []string{"/", "/flame", "/?by=host"} {
		code, body := get(t, s, page)
		if code != 200 || !strings.Contains(body, "Nothing is stored in the test source yet: no host has delivered samples.") {
			t.Errorf("%s: %d, want the empty-source notice:\n%s", page, code, body)
		}
		if strings.Contains(body, "no sample matches the filters") {
			t.Errorf("%s: an empty source blamed on the filters", page)
		}
	}
}

// TestLivePages: a live source's pages carry the refresh script and the
// box that turns it off; a closed one's do not, and neither does an
// error page.
func TestLivePages(t *testing.T) {
	live := New(&testBackend{src: fleet(false), hosts: []string{"alpha0"}, live: true}, t.Logf)
	_, body := get(t, live, "/")
	if !strings.Contains(body, `<body data-live="5">`) || !strings.Contains(body, `id="live" checked`) || !strings.Contains(body, `src="/static/live.js"`) {
		t.Errorf("a live source's page has no refresh:\n%s", body)
	}
	if _, body := get(t, live, "/?event=bogus"); strings.Contains(body, "data-live") {
		t.Error("an error page refreshes itself")
	}
	closed := New(&testBackend{src: fleet(false), hosts: []string{"alpha0"}}, t.Logf)
	if _, body := get(t, closed, "/"); strings.Contains(body, "live.js") {
		t.Error("a closed source's page refreshes itself")
	}
	if code, body := get(t, live, "/static/live.js"); code != 200 || !strings.Contains(body, "location.reload()") {
		t.Errorf("live.js: %d", code)
	}
}

// TestListingKeepsItsImage: the hot procedures' rows name the image
// each came from (in=, a view parameter: of the images with a procedure
// of that name, the listing shows that one), and the navigation's links,
// which carry the filters, do not carry it.
func TestListingKeepsItsImage(t *testing.T) {
	s := New(&testBackend{src: fleet(false), hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	_, body := get(t, s, "/?limit=0")
	for _, im := range []string{"a", "b"} {
		if !strings.Contains(body, `href="/list?in=%2Fbin%2F`+im+`&amp;proc=main"`) {
			t.Errorf("the hot procedures' row for main in /bin/%s does not name its image:\n%s", im, body)
		}
	}
	_, body = get(t, s, "/list?proc=main&in=/bin/b")
	if strings.Contains(body, `id="nav-flame" href="/flame?in=`) || !strings.Contains(body, `<input type="hidden" name="in" value="/bin/b">`) {
		t.Errorf("in= should stay with the listing's form, not the navigation:\n%s", body)
	}
}

// TestToolPages: the ProfileMe, values and paths pages show the tool's
// report over the page's selection, or the tool's words on what is
// missing with the command that records it; a bad view is a 400.
func TestToolPages(t *testing.T) {
	s := New(&testBackend{src: fleet(false), hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	code, body := get(t, s, "/values?host=alpha1&view=frequent")
	if code != 200 || !strings.Contains(body, `<pre class="report" id="report">hot loads (frequent view) of hosts [alpha1]`) {
		t.Errorf("/values: %d\n%s", code, body)
	}
	if !strings.Contains(body, `<a href="/values?host=alpha1&amp;view=latency">latency</a> · <b>frequent</b>`) {
		t.Errorf("/values: no links to the other views, keeping the filters:\n%s", body)
	}
	code, body = get(t, s, "/me?proc=hot")
	if code != 200 || !strings.Contains(body, `id="missing" role="status">no ProfileMe samples selected`) ||
		!strings.Contains(body, "dcpi profile --model ev6 --profileme") || strings.Contains(body, `id="report"`) {
		t.Errorf("/me without ProfileMe samples: %d\n%s", code, body)
	}
	if code, body := get(t, s, "/values?view=bogus"); code != 400 || !strings.Contains(body, `view=&#34;bogus&#34;: want latency, frequent, semiinv`) {
		t.Errorf("/values?view=bogus: %d", code)
	}
	if code, body := get(t, s, "/paths"); code != 200 || !strings.Contains(body, "dcpi pp upload") {
		t.Errorf("/paths: %d\n%s", code, body)
	}
}
