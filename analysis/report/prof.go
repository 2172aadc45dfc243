package report

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// By is what a dcpiprof row stands for.
type By uint8

// Row kinds (sec. 3.1: "It can also list the samples by image, rather than
// by procedure").
const (
	ByProcedure By = iota // one row per procedure of each image
	ByImage               // one row per image
)

func (b By) String() string {
	switch b {
	case ByProcedure:
		return "procedure"
	case ByImage:
		return "image"
	}
	return fmt.Sprintf("By(%d)", uint8(b))
}

// MarshalText gives String, for JSON.
func (b By) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses String's form.
func (b *By) UnmarshalText(t []byte) error {
	v, err := ParseBy(string(t))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// ParseBy inverts By.String.
func ParseBy(s string) (By, error) {
	switch s {
	case "procedure", "proc":
		return ByProcedure, nil
	case "image":
		return ByImage, nil
	}
	return 0, fmt.Errorf("analysis: rows by %q: want procedure or image", s)
}

// ProfQuery is a dcpiprof request.
type ProfQuery struct {
	// Filter selects the samples: epochs, hosts, images (by key), PIDs,
	// with storage.Query's rules (nil selects all). Its Events are used
	// only when Events is nil.
	Filter storage.Query
	// Events are the column groups, in order; the first sorts the rows.
	// nil means every event the selected samples hold, by number (so
	// cycles, event 0, comes first when present).
	Events []uint8
	// ImagePaths selects images by the path in their record, after
	// Filter: an entry containing '/' must equal the path, one without
	// must equal its last element ("hashdb" matches "/bin/hashdb"). An
	// image never uploaded is matched by its key's string form. nil
	// selects every image.
	ImagePaths []string
	By         By
	// Limit keeps the first Limit rows (the top N); 0 keeps all.
	// Percentages and totals are of everything selected, kept or not.
	Limit int
}

// ProfColumn is one event's column group: its number, name and the total
// of its samples over every selected row.
type ProfColumn struct {
	Event uint8  `json:"event"`
	Name  string `json:"name"`
	Total uint64 `json:"total"`
}

// ProfRow is one procedure (or image) with its samples per column.
type ProfRow struct {
	Procedure string        `json:"procedure,omitempty"` // "" when the table is by image
	Image     string        `json:"image"`               // the path in the image's record, or its key's string if none was uploaded
	ImageKey  wire.ImageKey `json:"image_key"`
	// Counts, Percent and CumPercent are parallel to ProfTable.Columns.
	// Percent is of the column's Total; CumPercent is of the samples of
	// this row and every row above it, in the table's order.
	Counts     []uint64  `json:"counts"`
	Percent    []float64 `json:"percent"`
	CumPercent []float64 `json:"cum_percent"`
}

// ProfTable is dcpiprof's output as data.
//
// Its JSON form (WriteJSON) is the machine interface of dcpi prof; the
// field names are stable.
type ProfTable struct {
	By      By           `json:"by"`
	Columns []ProfColumn `json:"events"`
	Rows    []ProfRow    `json:"rows"`
	// Omitted is how many rows Limit cut, and OmittedCounts their samples
	// per column.
	Omitted       int      `json:"omitted_rows"`
	OmittedCounts []uint64 `json:"omitted_counts,omitempty"`
}

// Prof computes the dcpiprof table of q over src: samples summed per
// procedure (or image) over the selected epochs, hosts and PIDs, one
// column group per event, rows sorted by the first event's count
// descending (ties: the next events, then image path, procedure and image
// key ascending). Offsets are symbolized with the images' uploaded symbol
// tables (see symbolize.Table); samples no symbol covers are their
// image's symbolize.UnknownProcedure row; symbols of one image that share
// a name (aliases, same-named static functions) share a row. Wrap src with
// symbolize.New to keep symbol tables across calls.
func Prof(ctx context.Context, src analysis.Source, q ProfQuery) (*ProfTable, error) {
	if q.Limit < 0 {
		return nil, fmt.Errorf("analysis: prof: %w: limit %d is negative", analysis.ErrQuery, q.Limit)
	}
	if q.By != ByProcedure && q.By != ByImage {
		return nil, fmt.Errorf("analysis: prof: %w: rows by %v", analysis.ErrQuery, q.By)
	}
	p, sq, err := newProfiler(symbolize.New(src), q)
	if err != nil {
		return nil, err
	}
	add := func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error {
		return p.add(ctx, image, offset, event, host, count)
	}
	if err := src.Profile(ctx, sq, add); err != nil {
		return nil, fmt.Errorf("analysis: prof: %w", err)
	}
	return p.table(q.Limit), nil
}

// newProfiler prepares a Prof call: the accumulator and the storage query
// to feed it (Stats and Diff feed several from one scan).
func newProfiler(syms *symbolize.Symbolizer, q ProfQuery) (*profiler, storage.Query, error) {
	sq := q.Filter
	p := &profiler{syms: syms, by: q.By, paths: q.ImagePaths, images: map[wire.ImageKey]*profImage{}}
	for i := range p.colOf {
		p.colOf[i] = -1
	}
	if q.Events != nil {
		if len(q.Events) == 0 {
			return nil, sq, fmt.Errorf("analysis: prof: %w: no events", analysis.ErrQuery)
		}
		for _, e := range q.Events {
			if p.colOf[e] >= 0 {
				return nil, sq, fmt.Errorf("analysis: prof: %w: event %s listed twice", analysis.ErrQuery, analysis.EventName(e))
			}
			p.addColumn(e)
		}
		sq.Events = slices.Clone(q.Events)
	}
	return p, sq, nil
}

// profiler accumulates one Prof call.
type profiler struct {
	syms   *symbolize.Symbolizer
	by     By
	paths  []string
	colOf  [256]int // column of each event number, -1 if none
	cols   []ProfColumn
	rows   []ProfRow
	images map[wire.ImageKey]*profImage

	lastKey wire.ImageKey
	last    *profImage
}

// profImage is one image's part of the table.
type profImage struct {
	key     wire.ImageKey
	table   *symbolize.Table
	skip    bool           // ImagePaths does not select it
	bySym   []int32        // row+1 of each symbol index; 0 = none yet
	byName  map[string]int // row of each procedure name (aliases and same-named statics share one)
	unknown int            // row+1 of symbolize.UnknownProcedure (or of the image, by image)

	// The last lookup's answer holds for offsets in [from, until): rows
	// arrive in offset order within an image, so most need no search.
	from, until uint64
	lastRow     int
}

func (p *profiler) addColumn(e uint8) int {
	p.colOf[e] = len(p.cols)
	p.cols = append(p.cols, ProfColumn{Event: e, Name: analysis.EventName(e)})
	return p.colOf[e]
}

func (p *profiler) add(ctx context.Context, image wire.ImageKey, offset uint64, event uint8, _ string, count uint64) error {
	im := p.last
	if im == nil || image != p.lastKey {
		var err error
		if im, err = p.image(ctx, image); err != nil {
			return err
		}
		p.lastKey, p.last = image, im
	}
	if im.skip {
		return nil
	}
	col := p.colOf[event]
	if col < 0 {
		col = p.addColumn(event)
	}
	r := p.row(im, offset)
	c := p.rows[r].Counts
	for len(c) <= col {
		c = append(c, 0)
	}
	c[col] = satAdd(c[col], count)
	p.rows[r].Counts = c
	return nil
}

func (p *profiler) image(ctx context.Context, key wire.ImageKey) (*profImage, error) {
	if im, ok := p.images[key]; ok {
		return im, nil
	}
	t, err := p.syms.Table(ctx, key)
	if err != nil {
		return nil, err
	}
	im := &profImage{key: key, table: t, skip: !analysis.MatchImagePath(p.paths, t.Path)}
	if p.by == ByProcedure {
		im.bySym = make([]int32, t.Len())
		im.byName = map[string]int{}
	}
	p.images[key] = im
	return im, nil
}

// row returns the index of offset's row in im, creating it.
func (p *profiler) row(im *profImage, offset uint64) int {
	if p.by == ByImage {
		if im.unknown == 0 {
			im.unknown = p.newRow(im, "") + 1
		}
		return im.unknown - 1
	}
	if offset >= im.from && offset < im.until {
		return im.lastRow
	}
	i, until, ok := im.table.Index(offset)
	im.from, im.until = offset, until
	switch {
	case !ok:
		if im.unknown == 0 {
			im.unknown = p.newRow(im, symbolize.UnknownProcedure) + 1
		}
		im.lastRow = im.unknown - 1
	case im.bySym[i] > 0:
		im.lastRow = int(im.bySym[i] - 1)
	default:
		name := im.table.Symbol(i).Name
		r, ok := im.byName[name]
		if !ok {
			r = p.newRow(im, name)
			im.byName[name] = r
		}
		im.bySym[i] = int32(r + 1)
		im.lastRow = r
	}
	return im.lastRow
}

func (p *profiler) newRow(im *profImage, proc string) int {
	p.rows = append(p.rows, ProfRow{Procedure: proc, Image: im.table.Path, ImageKey: im.key, Counts: make([]uint64, len(p.cols))})
	return len(p.rows) - 1
}

// table totals, sorts and cuts the rows. With a limit it selects the top
// rows with a bounded heap and sorts only those: a fleet has many more
// procedures with samples than anyone reads.
func (p *profiler) table(limit int) *ProfTable {
	n := len(p.cols)
	rows := p.rows
	for i := range rows {
		for len(rows[i].Counts) < n {
			rows[i].Counts = append(rows[i].Counts, 0)
		}
		for c, v := range rows[i].Counts {
			p.cols[c].Total = satAdd(p.cols[c].Total, v)
		}
	}
	// above is a total order: rows are unique by (image key, procedure).
	above := func(a, b *ProfRow) int {
		for c := range n {
			if x := cmp.Compare(b.Counts[c], a.Counts[c]); x != 0 {
				return x
			}
		}
		if x := cmp.Compare(a.Image, b.Image); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Procedure, b.Procedure); x != 0 {
			return x
		}
		return a.ImageKey.Compare(b.ImageKey)
	}
	keep := len(rows)
	if limit > 0 {
		keep = min(limit, len(rows))
	}
	top := topRows(rows, keep, above)
	t := &ProfTable{By: p.by, Columns: p.cols, Rows: make([]ProfRow, 0, keep)}
	if t.Columns == nil {
		t.Columns = []ProfColumn{}
	}
	cum := make([]uint64, n)
	pct := func(v, total uint64) float64 {
		if total == 0 {
			return 0
		}
		return 100 * float64(v) / float64(total)
	}
	for _, i := range top {
		r := rows[i]
		r.Percent, r.CumPercent = make([]float64, n), make([]float64, n)
		for c, v := range r.Counts {
			cum[c] = satAdd(cum[c], v)
			r.Percent[c] = pct(v, p.cols[c].Total)
			r.CumPercent[c] = pct(cum[c], p.cols[c].Total)
		}
		t.Rows = append(t.Rows, r)
	}
	if keep < len(rows) {
		t.Omitted = len(rows) - keep
		t.OmittedCounts = make([]uint64, n)
		kept := make([]bool, len(rows))
		for _, i := range top {
			kept[i] = true
		}
		for i := range rows {
			if !kept[i] {
				for c, v := range rows[i].Counts {
					t.OmittedCounts[c] = satAdd(t.OmittedCounts[c], v)
				}
			}
		}
	}
	return t
}

// topRows returns the indices of the first k rows in above's order, in
// that order: a heap of the best k seen so far (its root the worst of
// them), O(len(rows) log k).
func topRows(rows []ProfRow, k int, above func(a, b *ProfRow) int) []int {
	if k == 0 {
		return nil
	}
	h := make([]int, 0, k)
	// worse(i, j): row i sorts below row j, so it is nearer the root.
	worse := func(i, j int) bool { return above(&rows[h[i]], &rows[h[j]]) > 0 }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && worse(r, l) {
				m = r
			}
			if !worse(m, i) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := range rows {
		switch {
		case len(h) < k:
			h = append(h, i)
			for j := len(h) - 1; j > 0; {
				parent := (j - 1) / 2
				if !worse(j, parent) {
					break
				}
				h[j], h[parent] = h[parent], h[j]
				j = parent
			}
		case above(&rows[i], &rows[h[0]]) < 0:
			h[0] = i
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b int) int { return above(&rows[a], &rows[b]) })
	return h
}
