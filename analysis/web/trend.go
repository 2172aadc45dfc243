package web

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/analysis/trend"
	"dcpi/storage"
)

// trendView is the trend page: dcpi trend's chart and figures.
type trendView struct {
	Trend *trend.Trend
	// Chart is the SVG trend.WriteSVG drew, inline.
	Chart template.HTML
	Plot  trend.Plot
	// RowQuery links each series' procedure to its listing ("" when the
	// series is not one procedure), parallel to Trend.Series.
	RowQuery []string
}

// trend draws dcpi trend over the selection: the fleet total and the top
// procedures (top=N) or the measures given (measure=procedure=NAME,
// measure=image=PATH), per epoch of the selection.
func (s *Server) trend(ctx context.Context, req request, pd *pageData) error {
	sel, err := s.selection(ctx, req, pd)
	if err != nil {
		return err
	}
	top, err := intParam(req, "top", trend.DefaultTop, 1)
	if err != nil {
		return err
	}
	p, err := req.one("plot")
	if err != nil {
		return err
	}
	plot, err := trend.ParsePlot(p)
	if err != nil {
		return badf("%v", err)
	}
	var measures []trend.Measure
	for _, v := range req.view["measure"] {
		m, err := trend.ParseMeasure(v)
		if err != nil {
			return badf("%v", err)
		}
		measures = append(measures, m)
	}
	if len(sel.Events) > 1 {
		return badf("event: a trend counts one event; give one")
	}
	pd.Keep = map[string]string{"plot": p}
	if v, _ := req.one("top"); v != "" {
		pd.Keep["top"] = v
	}
	infos, err := s.b.Epochs(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	all := make([]trend.Epoch, len(infos))
	for i, e := range infos {
		all[i] = trend.Epoch{Number: e.Number, Start: e.Start, End: e.End}
		if !e.Start.IsZero() && e.End.IsZero() {
			all[i].End, all[i].Open = now, true
		}
	}
	eps, err := trend.SelectEpochs(all, sel.Filter.Epochs)
	if err != nil {
		if errors.Is(err, trend.ErrNoEpochs) {
			return badf("%s", strings.Replace(err.Error(), "--epoch or --epochs", "epoch= or epochs=", 1))
		}
		return err
	}
	q := trend.Query{Filter: sel.Filter, ImagePaths: sel.ImagePaths, Epochs: eps, Measures: measures, Top: top}
	if len(sel.Events) == 1 {
		q.Event = sel.Events[0]
	}
	t, err := trend.Run(ctx, s.b.Source(), q)
	if err != nil {
		return err
	}
	if t.Total.Samples == 0 {
		if err := s.emptyError(ctx, sel, pd); err != nil {
			return err
		}
	}
	var svg strings.Builder
	if err := t.WriteSVG(&svg, plot); err != nil {
		return err
	}
	v := &trendView{Trend: t, Chart: template.HTML(svg.String()), Plot: plot}
	for _, se := range t.Series {
		link := ""
		if se.Measure.Kind == trend.KindProcedure && !strings.HasPrefix(se.Measure.Value, "[") {
			link = req.with("proc", se.Measure.Value)
		}
		v.RowQuery = append(v.RowQuery, link)
	}
	pd.Title, pd.View = "trend", v
	return nil
}

// diffFlameView is the differential flame graph: set B's call tree laid
// out as the flame graph, each box coloured by the change in its share
// from set A to set B.
type diffFlameView struct {
	A, B           string
	Event          string
	TotalA, TotalB uint64
	Flat           bool // no call stacks: the flat profiles' shares
	Min            float64
	// Graph is B's tree drawn; each box's Fill is its change (red grew,
	// blue shrank, pale grey unchanged) and Deltas[i] Graph.Boxes[i]'s
	// change in share from A to B, percentage points.
	Graph  *flameGraph
	Deltas []float64
	// MaxDelta is the largest change in a box's share, in percentage
	// points: the deepest colour.
	MaxDelta float64
}

// hsl is a CSS colour: hue in degrees, saturation and lightness in
// percent.
type hsl struct{ H, S, L int }

// diffFlame compares two selections (a=SPEC, b=SPEC, as the diff page)
// as a differential flame graph: widths are B's, colours the change from
// A (Gregg's differential flame graphs). A path A has and B lacks has no
// box; the diff page lists it.
func (s *Server) diffFlame(ctx context.Context, req request, pd *pageData) error {
	sel, err := s.selection(ctx, req, pd)
	if err != nil {
		return err
	}
	a, b, err := s.pair(ctx, req)
	if err != nil {
		return err
	}
	if len(sel.Events) > 1 {
		return badf("event: a flame graph counts one event; give one")
	}
	pd.Keep = map[string]string{"a": a, "b": b}
	p, err := flameParams(req, pd)
	if err != nil {
		return err
	}
	if p.icicle {
		return badf("view=icicle: the differential flame graph is drawn as a flame graph")
	}
	q := report.StackQuery{ImagePaths: sel.ImagePaths}
	if len(sel.Events) == 1 {
		q.Event = sel.Events[0]
	}
	setA, err := s.b.Set(ctx, sel, a)
	if err != nil {
		return badf("a: %v", err)
	}
	setB, err := s.b.Set(ctx, sel, b)
	if err != nil {
		return badf("b: %v", err)
	}
	treeA, flatA, err := s.callTree(ctx, q, setA.Filter)
	if err != nil {
		return err
	}
	treeB, flatB, err := s.callTree(ctx, q, setB.Filter)
	if err != nil {
		return err
	}
	if flatA != flatB {
		// Compare like with like: both flat.
		if treeA, _, err = s.flatCallTree(ctx, q, setA.Filter); err == nil {
			treeB, _, err = s.flatCallTree(ctx, q, setB.Filter)
		}
		if err != nil {
			return err
		}
	}
	v := &diffFlameView{A: setA.Name, B: setB.Name, Event: analysis.EventName(q.Event), TotalA: treeA.Total, TotalB: treeB.Total,
		Flat: flatA || flatB, Min: p.minPct}
	sharesA := map[string]float64{}
	pathShares(treeA, "", float64(treeA.Total), sharesA)
	v.Graph = layoutGraph(req, pd, "diffflame", treeB, p)
	for _, bx := range v.Graph.Boxes {
		d := bx.Pct - sharesA[bx.Key]
		v.Deltas = append(v.Deltas, d)
		v.MaxDelta = max(v.MaxDelta, math.Abs(d))
	}
	for i := range v.Graph.Boxes {
		b := &v.Graph.Boxes[i]
		b.Fill = deltaColor(v.Deltas[i], v.MaxDelta)
		b.Delta = strconv.FormatFloat(v.Deltas[i], 'f', 2, 64)
		b.Title = fmt.Sprintf("%s: B %.2f%%, A %.2f%%, change %+.2f pp", b.Proc, b.Pct, sharesA[b.Key], v.Deltas[i])
	}
	pd.Title, pd.View = "differential flame graph", v
	return nil
}

// pair is the a= and b= of a comparison, or the first two hosts (else
// epochs) when neither is given.
func (s *Server) pair(ctx context.Context, req request) (string, string, error) {
	a, err := req.one("a")
	if err != nil {
		return "", "", err
	}
	b, err := req.one("b")
	if err != nil {
		return "", "", err
	}
	if a == "" && b == "" {
		if a, b = s.defaultPair(ctx); a == "" {
			return "", "", badf("give two selections to compare: a=SPEC&b=SPEC, each as dcpi stats --set (epoch=1, host=alpha0, since=1h, label=rack=r1)")
		}
	}
	if a == "" || b == "" {
		return "", "", badf("give both selections: a=SPEC&b=SPEC (e.g. a=epoch=1&b=epoch=2)")
	}
	return a, b, nil
}

// callTree is the top-down call tree of f's stacks, or without stacks
// the flat profile's (flat true).
func (s *Server) callTree(ctx context.Context, q report.StackQuery, f storage.Query) (*report.TreeNode, bool, error) {
	q.Filter = f
	ct, err := report.Tree(ctx, s.b.Source(), report.TreeQuery{StackQuery: q, TopDown: true})
	switch {
	case errors.Is(err, analysis.ErrNoStacks) || err == nil && ct.Root.Total == 0:
		return s.flatCallTree(ctx, q, f)
	case err != nil:
		return nil, false, err
	}
	return ct.Root, false, nil
}

// flatCallTree is f's flat profile as a tree of one level (flatTree).
func (s *Server) flatCallTree(ctx context.Context, q report.StackQuery, f storage.Query) (*report.TreeNode, bool, error) {
	t, err := report.Prof(ctx, s.b.Source(), report.ProfQuery{Filter: f, Events: []uint8{q.Event}, ImagePaths: q.ImagePaths, Limit: 200})
	if err != nil {
		return nil, true, err
	}
	return flatTree(t), true, nil
}

// pathShares records, under each node's path key (as flameLayout keys
// its boxes), the node's percentage of total.
func pathShares(n *report.TreeNode, parent string, total float64, out map[string]float64) {
	if n == nil || total == 0 {
		return
	}
	k := pathKey(parent, n.Proc)
	out[k] += 100 * float64(n.Total) / total
	for _, c := range n.Children {
		pathShares(c, k, total, out)
	}
}

// deltaColor colours a change of delta percentage points against the
// largest: red for growth, blue for shrinkage, deeper the larger; pale
// grey for none.
func deltaColor(delta, maxDelta float64) hsl {
	if maxDelta == 0 || delta == 0 {
		return hsl{0, 0, 90}
	}
	f := math.Min(math.Abs(delta)/maxDelta, 1)
	h := 0
	if delta < 0 {
		h = 215
	}
	return hsl{h, int(math.Round(30 + 60*f)), int(math.Round(92 - 37*f))}
}

func (c hsl) String() string { return fmt.Sprintf("hsl(%d, %d%%, %d%%)", c.H, c.S, c.L) }
