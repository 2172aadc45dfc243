package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/calc"
	"dcpi/analysis/report"
)

// topView is the hot procedures page: dcpiprof's table.
type topView struct {
	Table *report.ProfTable
	// Groups replaces Table with by=LABEL: the samples per label value.
	Groups *report.GroupTable
	// GroupQuery is each group's link to the hot procedures of its hosts,
	// parallel to Groups.Rows.
	GroupQuery []string
	// ByLinks are the groupings the page offers, the current one's Query
	// empty.
	ByLinks []byLink
	Search  string
	// Matched is how many rows the search matched before the limit.
	Matched int
	Limit   int
	ByImage bool
	// RowQuery is each row's link to its listing, parallel to Rows.
	RowQuery []string
}

func (s *Server) top(ctx context.Context, req request, pd *pageData) error {
	sel, err := s.selection(ctx, req, pd)
	if err != nil {
		return err
	}
	by, label, err := byParam(req)
	if err != nil {
		return err
	}
	limit, err := intParam(req, "limit", DefaultTopRows, 0)
	if err != nil {
		return err
	}
	search, err := req.one("q")
	if err != nil {
		return err
	}
	pd.Form.Search = search
	pd.Keep = map[string]string{}
	if v, _ := req.one("by"); v != "" {
		pd.Keep["by"] = v
	}
	if v, _ := req.one("limit"); v != "" {
		pd.Keep["limit"] = v
	}
	if label != "" {
		return s.groups(ctx, req, pd, sel, label, limit, search)
	}
	q := report.ProfQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, By: by, Limit: limit}
	if search != "" {
		q.Limit = 0 // the search applies to every row; the limit after it
	}
	t, err := report.Prof(ctx, s.b.Source(), q)
	if err != nil {
		return err
	}
	if len(t.Rows) == 0 {
		if err := s.emptyError(ctx, sel, pd); err != nil {
			return err
		}
	}
	v := &topView{Table: t, Search: search, Limit: limit, ByImage: by == report.ByImage, Matched: len(t.Rows) + t.Omitted,
		ByLinks: byLinks(req, map[bool]string{true: "image", false: "procedure"}[by == report.ByImage])}
	if search != "" {
		needle := strings.ToLower(search)
		rows := t.Rows[:0]
		for _, r := range t.Rows {
			if strings.Contains(strings.ToLower(r.Procedure), needle) || strings.Contains(strings.ToLower(r.Image), needle) {
				rows = append(rows, r)
			}
		}
		v.Matched = len(rows)
		if limit > 0 && len(rows) > limit {
			rows = rows[:limit]
		}
		t.Rows, t.Omitted, t.OmittedCounts = rows, 0, nil
	}
	for _, r := range t.Rows {
		// The row's image too: a name two images share lists only this one.
		v.RowQuery = append(v.RowQuery, req.with("proc", r.Procedure, "in", r.Image))
	}
	pd.Title, pd.View = "hot procedures", v
	return nil
}

// byLink is one grouping of the hot procedures page.
type byLink struct{ Name, Query string }

// byLinks offers procedure, image and host (any label works in the URL;
// host is the one every source has), linking all but the current.
func byLinks(req request, current string) []byLink {
	var links []byLink
	for _, name := range []string{"procedure", "image", "host"} {
		l := byLink{Name: name}
		if name != current {
			by := name
			if by == "procedure" {
				by = ""
			}
			l.Query = "/" + req.with("by", by)
			if l.Query == "/" {
				l.Query = "/?"
			}
		}
		links = append(links, l)
	}
	return links
}

// groups is the hot procedures page with by=LABEL: dcpi prof --by
// LABEL's table, each value a link to its own hot procedures.
func (s *Server) groups(ctx context.Context, req request, pd *pageData, sel Selection, label string, limit int, search string) error {
	if search != "" {
		return badf("q: searches procedures; not with by=%s", label)
	}
	g, err := s.b.Groups(ctx, sel, label, limit)
	if err != nil {
		return err
	}
	if len(g.Rows) == 0 {
		if err := s.emptyError(ctx, sel, pd); err != nil {
			return err
		}
	}
	v := &topView{Groups: g, Limit: limit, ByLinks: byLinks(req, label)}
	for _, r := range g.Rows {
		// The group's hosts, as the table names them: the link selects
		// them by name, which every backend takes.
		v.GroupQuery = append(v.GroupQuery, req.withHosts(r.Hosts))
	}
	pd.Title, pd.View = "samples by "+label, v
	return nil
}

// listView is a procedure's page: dcpilist's listing and dcpicalc's
// analysis of it.
type listView struct {
	Proc    string
	Listing *report.Listing
	// CalcPage is dcpi calc's report for the procedure as tables, Calc
	// as the tool's text; CalcError says why there is none.
	CalcPage  *calcPage
	Calc      string
	CalcError string
	// MeQuery links the procedure's ProfileMe page.
	MeQuery string
}

func (s *Server) list(ctx context.Context, req request, pd *pageData) error {
	proc, err := req.one("proc")
	if err != nil {
		return err
	}
	if proc == "" {
		return badf("give a procedure: /list?proc=NAME (the hot procedures page links each to its listing)")
	}
	in, err := req.one("in")
	if err != nil {
		return err
	}
	pd.Keep = map[string]string{"proc": proc, "in": in}
	sel, err := s.selection(ctx, req, pd)
	if err != nil {
		return err
	}
	if in != "" {
		// The image the link came from: of the images with a procedure
		// of that name, list this one. A view parameter, not the image
		// filter, so the other pages' links do not narrow to it.
		sel.ImagePaths, sel.Filter.Images = []string{in}, nil
	}
	l, err := report.List(ctx, s.b.Source(), report.ListQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths,
		Procedures: []string{proc}, Files: s.b.Files(), Source: s.b.SourceFile})
	if err != nil {
		if errors.Is(err, analysis.ErrQuery) {
			if h := s.b.Hint(ctx, sel); h != "" {
				return badf("%v; %s", err, h)
			}
			if h := s.hotNames(ctx, sel); h != "" {
				return badf("%v; procedures with the most samples in the selection: %s", err, h)
			}
		}
		return err
	}
	v := &listView{Proc: proc, Listing: l, MeQuery: req.with("proc", proc)}
	v.CalcPage, v.Calc, v.CalcError = s.calc(ctx, sel, proc)
	pd.Title, pd.View = proc, v
	return nil
}

// calc runs dcpi calc on one procedure: its report as tables and as
// text, or why there is none.
func (s *Server) calc(ctx context.Context, sel Selection, proc string) (*calcPage, string, string) {
	periods, err := s.b.CalcPeriods(ctx, sel.Filter.Hosts)
	if err != nil {
		return nil, "", err.Error()
	}
	r, err := calc.Run(ctx, s.b.Source(), calc.Query{Filter: sel.Filter, ImagePaths: sel.ImagePaths, Procedures: []string{proc},
		Periods: periods, Files: s.b.Files(), Source: s.b.SourceFile})
	if err != nil {
		return nil, "", err.Error()
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf, false); err != nil {
		return nil, "", err.Error()
	}
	page, err := newCalcPage(r)
	if err != nil {
		return nil, "", err.Error()
	}
	return page, buf.String(), ""
}

// hotNames names the selection's ten hottest procedures.
func (s *Server) hotNames(ctx context.Context, sel Selection) string {
	t, err := report.Prof(ctx, s.b.Source(), report.ProfQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, Limit: 10})
	if err != nil {
		return ""
	}
	var names []string
	for _, r := range t.Rows {
		if !slices.Contains(names, r.Procedure) {
			names = append(names, r.Procedure)
		}
	}
	return strings.Join(names, ", ")
}

// flameView is the flame graph (or icicle) page.
type flameView struct {
	Flat  bool // no call stacks: the flat profile's shares
	Event string
	Total uint64
	Min   float64
	Graph *flameGraph
	// ByImage: boxes coloured by image, Legend the images' colours.
	ByImage bool
	Legend  []legendEntry
	// Other is the query string of the other orientation, ColorOther of
	// the other colouring.
	Other, ColorOther string
}

// flameGraph is the drawn graph both flame pages share: boxes placed,
// the zoom and the search.
type flameGraph struct {
	ID     string // the element's id: flame or diffflame
	Icicle bool
	Boxes  []flameBox
	Levels int
	Height int // pixels
	// Search is the q= the boxes were matched against, Matched the share
	// of the root's samples it matched (matchedSamples), percent.
	Search  string
	Matched float64
	// Focused is the box zoomed on (nil: the whole graph), Reset the
	// link back to the whole graph, Note what a stale focus became.
	Focused *flameBox
	Reset   string
	Note    string
}

// flameBox is a box placed for the page.
type flameBox struct {
	box
	Top         int     // pixels
	Left, Width float64 // percent of the graph's width
	Query       string  // the procedure's listing ("" for the root and [..] boxes)
	Zoom        string  // this page zoomed on the box
	Fill        hsl
	Match       bool // the procedure contains the search
	Title       string
	// Delta is the differential graph's change in share, percentage
	// points with two decimals ("" on the plain graph).
	Delta string
}

const flameRow = 18 // pixels per level

// graphParams are a flame page's own parameters: orientation, the zoom,
// the search, and the smallest box.
type graphParams struct {
	icicle bool
	focus  []string
	search string
	minPct float64
}

func flameParams(req request, pd *pageData) (graphParams, error) {
	var g graphParams
	orient, err := req.one("view")
	if err != nil {
		return g, err
	}
	if orient != "" && orient != "flame" && orient != "icicle" {
		return g, badf("view=%q: want flame or icicle", orient)
	}
	g.icicle = orient == "icicle"
	if g.minPct, err = floatParam(req, "min", 0.2, 0, 100); err != nil {
		return g, err
	}
	if g.focus, err = focusParam(req); err != nil {
		return g, err
	}
	if g.search, err = req.one("q"); err != nil {
		return g, err
	}
	pd.Form.Search = g.search
	for _, name := range []string{"view", "min", "focus", "color"} {
		if v, _ := req.one(name); v != "" {
			pd.Keep[name] = v
		}
	}
	return g, nil
}

// layoutGraph lays tree out for the page at path (flame or diffflame):
// zoomed on p.focus, boxes matched against p.search, each box linking to
// the page zoomed on it and to its listing.
func layoutGraph(req request, pd *pageData, id string, tree *report.TreeNode, p graphParams) *flameGraph {
	g := &flameGraph{ID: id, Icicle: p.icicle, Search: p.search}
	chain, ok := flameFocus(tree, p.focus)
	if len(p.focus) > 0 {
		g.Note = focusNote(chain, ok, p.focus)
	}
	boxes, depth := flameLayoutChain(chain, p.minPct/100, 64)
	g.Levels, g.Height = depth+1, (depth+1)*flameRow
	needle := strings.ToLower(p.search)
	if needle != "" && tree.Total > 0 {
		g.Matched = 100 * float64(matchedSamples(tree, needle)) / float64(tree.Total)
	}
	g.Reset = "/" + id + keepWith(req, pd.Keep, "focus", "")
	for _, b := range boxes {
		fb := flameBox{box: b, Top: b.Depth * flameRow, Left: 100 * b.X, Width: 100 * b.W}
		if !g.Icicle {
			fb.Top = (depth - b.Depth) * flameRow
		}
		if b.Depth > 0 && !strings.HasPrefix(b.Proc.Procedure, "[") {
			fb.Query = req.with("proc", b.Proc.Procedure, "in", b.Proc.Image)
		}
		fb.Zoom = "/" + id + keepWith(req, pd.Keep, "focus", strings.Join(b.Path, focusSep))
		fb.Match = needle != "" && strings.Contains(strings.ToLower(b.Proc.Procedure), needle)
		fb.Title = fmt.Sprintf("%s: %d samples (%s%% of all), %d self", b.Proc, b.Total, strconv.FormatFloat(b.Pct, 'f', 2, 64), b.Self)
		g.Boxes = append(g.Boxes, fb)
	}
	if len(chain) > 1 {
		for i := range g.Boxes {
			if !g.Boxes[i].Ancestor {
				g.Focused = &g.Boxes[i]
				break
			}
		}
	}
	return g
}

// keepWith is the filters and the page's kept view parameters with
// name set to value ("" removes it), for a link.
func keepWith(req request, keep map[string]string, name, value string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(keep)) {
		if k != name {
			kv = append(kv, k, keep[k])
		}
	}
	return req.with(append(kv, name, value)...)
}

func (s *Server) flame(ctx context.Context, req request, pd *pageData) error {
	sel, err := s.selection(ctx, req, pd)
	if err != nil {
		return err
	}
	pd.Keep = map[string]string{}
	p, err := flameParams(req, pd)
	if err != nil {
		return err
	}
	byImage, err := colorParam(req)
	if err != nil {
		return err
	}
	if len(sel.Events) > 1 {
		return badf("event: a flame graph counts one event; give one")
	}
	v := &flameView{Min: p.minPct, ByImage: byImage}
	q := report.StackQuery{Filter: sel.Filter, ImagePaths: sel.ImagePaths}
	if len(sel.Events) > 0 {
		q.Event = sel.Events[0]
	}
	v.Event = analysis.EventName(q.Event)
	var tree *report.TreeNode
	ct, err := report.Tree(ctx, s.b.Source(), report.TreeQuery{StackQuery: q, TopDown: true})
	if err == nil {
		tree = ct.Root
	}
	switch {
	case errors.Is(err, analysis.ErrNoStacks) || err == nil && tree.Total == 0:
		t, err := report.Prof(ctx, s.b.Source(), report.ProfQuery{Filter: sel.Filter, Events: []uint8{q.Event}, ImagePaths: sel.ImagePaths, Limit: 200})
		if err != nil {
			return err
		}
		if len(t.Rows) == 0 {
			if err := s.emptyError(ctx, sel, pd); err != nil {
				return err
			}
		}
		tree, v.Flat = flatTree(t), true
	case err != nil:
		return err
	}
	v.Total = tree.Total
	v.Graph = layoutGraph(req, pd, "flame", tree, p)
	boxes := make([]box, len(v.Graph.Boxes))
	for i, b := range v.Graph.Boxes {
		boxes[i] = b.box
	}
	hues, legend := imagePalette(boxes)
	if byImage {
		v.Legend = legend
	}
	for i := range v.Graph.Boxes {
		b := &v.Graph.Boxes[i]
		b.Fill = boxFill(b.box, byImage, hues)
	}
	other := map[bool]string{true: "flame", false: "icicle"}[p.icicle]
	v.Other = "/flame" + keepWith(req, pd.Keep, "view", other)
	v.ColorOther = "/flame" + keepWith(req, pd.Keep, "color", map[bool]string{true: "procedure", false: "image"}[byImage])
	pd.Title, pd.View = "flame graph", v
	if p.icicle {
		pd.Title = "icicle"
	}
	return nil
}

// diffView is dcpidiff's page.
type diffView struct {
	A, B  string
	Table *report.DiffTable
	// FlameQuery links the same comparison's differential flame graph.
	FlameQuery string
}

func (s *Server) diff(ctx context.Context, req request, pd *pageData) error {
	sel, err := s.selection(ctx, req, pd)
	if err != nil {
		return err
	}
	a, b, err := s.pair(ctx, req)
	if err != nil {
		return err
	}
	by, label, err := byParam(req)
	if err != nil {
		return err
	}
	if label != "" {
		return badf("by=%q: the diff compares procedures or images, not labels", label)
	}
	limit, err := intParam(req, "limit", 0, 0)
	if err != nil {
		return err
	}
	z, err := floatParam(req, "z", report.DefaultZ, 0.001, 1000)
	if err != nil {
		return err
	}
	pd.Keep = map[string]string{"a": a, "b": b}
	if len(sel.Events) > 1 {
		return badf("event: diff compares one event; give one")
	}
	q := report.DiffQuery{By: by, Limit: limit, Z: z, ImagePaths: sel.ImagePaths}
	if len(sel.Events) == 1 {
		q.Event = sel.Events[0]
	}
	if q.A, err = s.b.Set(ctx, sel, a); err != nil {
		return badf("a: %v", err)
	}
	if q.B, err = s.b.Set(ctx, sel, b); err != nil {
		return badf("b: %v", err)
	}
	t, err := report.Diff(ctx, s.b.Source(), q)
	if err != nil {
		return err
	}
	pd.Title, pd.View = "diff", &diffView{A: a, B: b, Table: t, FlameQuery: req.with("a", a, "b", b)}
	return nil
}

// defaultPair is the diff page's comparison when none is given.
func (s *Server) defaultPair(ctx context.Context) (string, string) {
	if hosts, err := s.b.Hosts(ctx); err == nil && len(hosts) >= 2 {
		return "host=" + hosts[0].Name, "host=" + hosts[1].Name
	}
	if eps, err := s.b.Epochs(ctx); err == nil && len(eps) >= 2 {
		return fmt.Sprintf("epoch=%d", eps[0].Number), fmt.Sprintf("epoch=%d", eps[1].Number)
	}
	return "", ""
}

func (s *Server) epochs(ctx context.Context, req request, pd *pageData) error {
	eps, err := s.b.Epochs(ctx)
	if err != nil {
		return err
	}
	pd.Title, pd.View = "epochs", eps
	if len(eps) == 0 {
		pd.Notice = "No epochs recorded (a dcpi node or dcpi profile database has none; a cluster's begin with its first node)."
	}
	return nil
}

func (s *Server) hosts(ctx context.Context, req request, pd *pageData) error {
	hosts, err := s.b.Hosts(ctx)
	if err != nil {
		return err
	}
	pd.Title, pd.View = "hosts", hosts
	if len(hosts) == 0 {
		pd.Notice = "No hosts registered."
	}
	return nil
}

// pprof downloads dcpi pprof's export of the selection; a bad selection
// gets the error page instead.
func (s *Server) pprof(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pd := &pageData{Nav: "pprof", Title: "pprof", Path: "/", Where: s.b.Where(), Status: http.StatusOK}
	fail := func(err error) {
		pd.Status, pd.Error = s.status(r, err), err.Error()
		s.render(w, "error", pd)
	}
	req, err := parseRequest(r.URL.RawQuery)
	if err != nil {
		fail(err)
		return
	}
	pd.Query, pd.Form = req.with(), formOf(req.filters)
	sel, err := s.selection(ctx, req, pd)
	if err != nil {
		fail(err)
		return
	}
	p, err := s.b.Pprof(ctx, sel)
	if err != nil {
		fail(err)
		return
	}
	if len(p.Sample) == 0 {
		if err := s.emptyError(ctx, sel, pd); err != nil {
			fail(err)
			return
		}
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		fail(err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="dcpi.pb.gz"`)
	w.Write(buf.Bytes())
}
