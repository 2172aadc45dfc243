// Package trend owns dcpi trend: what a measure — a procedure, an image,
// or the whole selection — took per epoch over a run of epochs, as
// samples, share of the selection and rate per second of the epoch, and
// the top procedures' trends when no measure is named. It reads through
// analysis.Source one epoch at a time, with dcpiprof's symbolization
// (report.Prof), so an epoch's row and dcpi prof --epoch N agree; the
// result prints itself as a table, JSON and an SVG chart. Which epochs
// and their wall-clock times are the caller's to give (profiledb maps a
// time range to them); the package opens nothing.
package trend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/storage"
	"dcpi/wire"
)

// Epoch is one epoch of the trend with its wall-clock span. An epoch is
// counted as a whole (DCPI sec. 4.3.3: its samples have no time of their
// own), so a rate is its samples over its length.
type Epoch struct {
	Number uint64    `json:"epoch"`
	Start  time.Time `json:"start,omitzero"` // zero: not recorded (a dcpi node database)
	// End is the epoch's end; an open epoch's is the query's Now.
	End  time.Time `json:"end,omitzero"`
	Open bool      `json:"open,omitempty"`
}

// Seconds is the epoch's length, 0 when its times are not known.
func (e Epoch) Seconds() float64 {
	if e.Start.IsZero() || !e.End.After(e.Start) {
		return 0
	}
	return e.End.Sub(e.Start).Seconds()
}

// ErrNoEpochs: the source records no epochs, so there is nothing to draw
// a trend over unless the epochs are named (dcpi node and dcpi profile
// write none).
var ErrNoEpochs = errors.New("no epochs are recorded here (dcpi node and dcpi profile write none; a cluster's coordinator does): give the epochs with --epoch or --epochs")

// SelectEpochs picks a trend's epochs from all the source records, in
// order: those want names (every one when want is nil). An epoch not
// recorded is an error naming those that are; where none is recorded, the
// named epochs are taken without times.
func SelectEpochs(all []Epoch, want []uint64) ([]Epoch, error) {
	byNumber := make(map[uint64]Epoch, len(all))
	for _, e := range all {
		byNumber[e.Number] = e
	}
	if want == nil {
		if len(all) == 0 {
			return nil, ErrNoEpochs
		}
		for _, e := range all {
			want = append(want, e.Number)
		}
	}
	want = slices.Compact(slices.Sorted(slices.Values(want)))
	eps := make([]Epoch, 0, len(want))
	for _, n := range want {
		e, ok := byNumber[n]
		switch {
		case !ok && len(all) > 0:
			return nil, queryError(fmt.Sprintf("epoch %d is not recorded; %s", n, recorded(all)))
		case !ok:
			e = Epoch{Number: n}
		}
		eps = append(eps, e)
	}
	return eps, nil
}

// recorded names the epochs all holds.
func recorded(all []Epoch) string {
	ns := make([]uint64, len(all))
	for i, e := range all {
		ns[i] = e.Number
	}
	slices.Sort(ns)
	if len(ns) == 1 {
		return fmt.Sprintf("epoch %d is", ns[0])
	}
	return fmt.Sprintf("epochs %d-%d are", ns[0], ns[len(ns)-1])
}

// Kind is what a measure counts.
type Kind string

// The kinds of measure. A measure is KIND=VALUE, so another kind (a
// process label, say) is a new constant and a case in Trend's matching.
const (
	KindSelection Kind = "selection" // every sample the filters select
	KindProcedure Kind = "procedure" // a procedure by name, in every selected image that has it
	KindImage     Kind = "image"     // an image by path, file name or content key
)

// Measure is what one series of the trend counts.
type Measure struct {
	Kind  Kind   `json:"kind"`
	Value string `json:"value,omitempty"`
	// Image narrows a procedure to one image (the top-N series name the
	// image of each procedure); "" is every image.
	Image string `json:"image,omitempty"`
}

func (m Measure) String() string {
	switch {
	case m.Kind == KindSelection:
		return "all selected samples"
	case m.Image != "":
		return fmt.Sprintf("%s %s in %s", m.Kind, m.Value, m.Image)
	}
	return fmt.Sprintf("%s %s", m.Kind, m.Value)
}

// ParseMeasure parses a measure as given: "procedure=NAME" (or
// "proc=NAME"), "image=PATH" (a path, file name or content key), or
// "selection" (or "") for the whole selection.
func ParseMeasure(s string) (Measure, error) {
	k, v, ok := strings.Cut(strings.TrimSpace(s), "=")
	k = strings.TrimSpace(k)
	switch {
	case !ok && (k == "" || k == string(KindSelection)):
		return Measure{Kind: KindSelection}, nil
	case ok && strings.TrimSpace(v) == "":
		return Measure{}, queryError(fmt.Sprintf("measure %q: empty %s", s, k))
	case k == "procedure" || k == "proc":
		return Measure{Kind: KindProcedure, Value: strings.TrimSpace(v)}, nil
	case k == "image":
		return Measure{Kind: KindImage, Value: strings.TrimSpace(v)}, nil
	}
	return Measure{}, queryError(fmt.Sprintf("measure %q: want procedure=NAME, image=PATH or selection", s))
}

// queryError is a request refused (a measure, an epoch): analysis.ErrQuery
// to errors.Is, its message alone to the user.
type queryError string

func (e queryError) Error() string { return string(e) }
func (e queryError) Unwrap() error { return analysis.ErrQuery }

// DefaultTop is how many procedures a trend without measures follows.
const DefaultTop = 5

// Query is a trend request.
type Query struct {
	// Filter selects the samples as for report.Prof; its Epochs and
	// Events are ignored (Epochs and Event below say which).
	Filter     storage.Query
	ImagePaths []string
	Event      uint8
	// Epochs are the trend's epochs, in order; an epoch without
	// samples is a row of zeros.
	Epochs []Epoch
	// Measures are the series; nil follows the Top procedures by
	// samples over all the epochs.
	Measures []Measure
	Top      int // 0: DefaultTop
}

// Point is one series' figures in one epoch.
type Point struct {
	Samples uint64 `json:"samples"`
	// Share is the percentage of the epoch's selected samples (0 in an
	// epoch with none).
	Share float64 `json:"share_percent"`
	// Rate is samples per second of the epoch; NaN (JSON null) where the
	// epoch's times are not known.
	Rate Rate `json:"rate_per_s"`
}

// Rate is samples per second, NaN when unknown.
type Rate float64

// MarshalJSON writes an unknown rate as null.
func (r Rate) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(r)) {
		return []byte("null"), nil
	}
	return []byte(fmt.Sprintf("%.6g", float64(r))), nil
}

// Series is one measure over the epochs.
type Series struct {
	Measure Measure `json:"measure"`
	Points  []Point `json:"points"` // parallel to Trend.Epochs
	// Samples and Share are over every epoch of the trend.
	Samples uint64  `json:"samples"`
	Share   float64 `json:"share_percent"`
}

// Trend is dcpi trend's result. Its JSON form is the command's machine
// interface.
type Trend struct {
	Event  string   `json:"event"`
	Epochs []Epoch  `json:"epochs"`
	Total  Series   `json:"total"`  // the whole selection
	Series []Series `json:"series"` // the measures, or the top procedures
	// Top is how many procedures were asked for when no measure was
	// given (0 with measures).
	Top int `json:"top,omitempty"`
}

// procKey names a procedure of one image.
type procKey struct {
	proc  string
	image wire.ImageKey
	path  string
}

// Run computes q over src: for each epoch one dcpiprof query of that
// epoch alone (by procedure, one event), whose rows are the measures'
// counts and whose total is the epoch's selection. Wrap src with
// symbolize.New so that symbol tables are read once, not per epoch.
func Run(ctx context.Context, src analysis.Source, q Query) (*Trend, error) {
	if q.Top < 0 {
		return nil, fmt.Errorf("analysis: trend: %w: top %d is negative", analysis.ErrQuery, q.Top)
	}
	top := 0
	if q.Measures == nil {
		top = cmp.Or(q.Top, DefaultTop)
	}
	t := &Trend{Event: analysis.EventName(q.Event), Epochs: slices.Clone(q.Epochs), Top: top, Total: Series{Measure: Measure{Kind: KindSelection}}}
	// Per epoch: the selection's total and each procedure's count.
	totals := make([]uint64, len(q.Epochs))
	counts := make([]map[procKey]uint64, len(q.Epochs))
	for i, e := range q.Epochs {
		f := q.Filter
		f.Epochs, f.Events = []uint64{e.Number}, nil
		pt, err := report.Prof(ctx, src, report.ProfQuery{Filter: f, Events: []uint8{q.Event}, ImagePaths: q.ImagePaths})
		if err != nil {
			return nil, fmt.Errorf("analysis: trend: epoch %d: %w", e.Number, err)
		}
		totals[i] = pt.Columns[0].Total
		counts[i] = make(map[procKey]uint64, len(pt.Rows))
		for _, r := range pt.Rows {
			counts[i][procKey{r.Procedure, r.ImageKey, r.Image}] += r.Counts[0]
		}
	}
	measures := q.Measures
	if measures == nil {
		measures = topProcedures(counts, top)
	}
	t.Total = t.series(Measure{Kind: KindSelection}, totals, totals)
	for _, m := range measures {
		per := make([]uint64, len(counts))
		for i, c := range counts {
			for k, n := range c {
				if m.matches(k) {
					per[i] += n
				}
			}
		}
		t.Series = append(t.Series, t.series(m, per, totals))
	}
	return t, nil
}

// matches says whether a procedure's row counts in m.
func (m Measure) matches(k procKey) bool {
	switch m.Kind {
	case KindSelection:
		return true
	case KindProcedure:
		return k.proc == m.Value && (m.Image == "" || m.Image == k.path)
	case KindImage:
		return m.Value == k.image.String() || analysis.MatchImagePath([]string{m.Value}, k.path)
	}
	return false
}

// topProcedures are the n procedures with the most samples over every
// epoch (ties: by name, then image), each a measure of its image.
func topProcedures(counts []map[procKey]uint64, n int) []Measure {
	sum := map[procKey]uint64{}
	for _, c := range counts {
		for k, v := range c {
			sum[k] += v
		}
	}
	keys := make([]procKey, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b procKey) int {
		return cmp.Or(cmp.Compare(sum[b], sum[a]), cmp.Compare(a.proc, b.proc), cmp.Compare(a.path, b.path), a.image.Compare(b.image))
	})
	ms := []Measure{}
	for _, k := range keys[:min(n, len(keys))] {
		ms = append(ms, Measure{Kind: KindProcedure, Value: k.proc, Image: k.path})
	}
	return ms
}

// series makes the series of m from its per-epoch samples and the
// selection's.
func (t *Trend) series(m Measure, samples, totals []uint64) Series {
	s := Series{Measure: m, Points: make([]Point, len(samples))}
	var all uint64
	for i, n := range samples {
		p := Point{Samples: n, Rate: Rate(math.NaN())}
		if totals[i] > 0 {
			p.Share = 100 * float64(n) / float64(totals[i])
		}
		if sec := t.Epochs[i].Seconds(); sec > 0 {
			p.Rate = Rate(float64(n) / sec)
		}
		s.Points[i] = p
		s.Samples += n
		all += totals[i]
	}
	if all > 0 {
		s.Share = 100 * float64(s.Samples) / float64(all)
	}
	return s
}

// Timed says whether every epoch's times are known, so that the chart's
// x axis is time and every rate is known.
func (t *Trend) Timed() bool {
	for _, e := range t.Epochs {
		if e.Seconds() == 0 {
			return false
		}
	}
	return len(t.Epochs) > 0
}
