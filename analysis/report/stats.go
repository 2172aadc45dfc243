package report

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"dcpi/analysis"
)

// StatsQuery is a dcpistats request (sec. 3.3 and Figure 3 of the paper).
type StatsQuery struct {
	// Sets are the sample sets compared: at least two.
	Sets []analysis.SampleSet
	// Event is the one event compared ("Number of samples of type cycles").
	Event      uint8
	ImagePaths []string
	By         By
	// MinSum drops the rows with fewer samples than this over all sets:
	// with few samples the normalized range is mostly noise (a procedure
	// with 1 sample in one set of four has range% 100).
	MinSum uint64
	// Limit keeps the first Limit rows; 0 keeps all.
	Limit int
}

// Summary is the statistics of one procedure's counts across K sample sets.
// Every statistic but N is over all K sets, a set without samples in the
// procedure counting 0: a procedure that vanishes from one run varies.
type Summary struct {
	Sum    uint64  `json:"sum"`
	N      int     `json:"n"`       // sets with samples in the procedure
	Mean   float64 `json:"mean"`    // Sum / K
	StdDev float64 `json:"std_dev"` // sample standard deviation (K-1 in the denominator; 0 when K = 1)
	Min    uint64  `json:"min"`
	Max    uint64  `json:"max"`
	// RangePct is the normalized range, 100 × (Max - Min) / Sum: the
	// paper's sort key ("the difference between the maximum and minimum
	// sample counts for that procedure, divided by the sum of the
	// samples"); 0 when Sum is 0.
	RangePct float64 `json:"range_pct"`
}

// Summarize computes the Summary of counts, one per sample set.
func Summarize(counts []uint64) Summary {
	var s Summary
	if len(counts) == 0 {
		return s
	}
	s.Min = math.MaxUint64
	var sum float64
	for _, c := range counts {
		s.Sum = satAdd(s.Sum, c)
		sum += float64(c)
		s.Min, s.Max = min(s.Min, c), max(s.Max, c)
		if c > 0 {
			s.N++
		}
	}
	k := float64(len(counts))
	s.Mean = sum / k
	if len(counts) > 1 {
		var ss float64
		for _, c := range counts {
			d := float64(c) - s.Mean
			ss += d * d
		}
		s.StdDev = math.Sqrt(ss / (k - 1))
	}
	if s.Sum > 0 {
		s.RangePct = 100 * float64(s.Max-s.Min) / float64(s.Sum)
	}
	return s
}

// StatsRow is one procedure (or image) across the sets.
type StatsRow struct {
	Procedure string   `json:"procedure,omitempty"`
	Image     string   `json:"image"`
	Counts    []uint64 `json:"counts"` // per set, parallel to StatsTable.Sets
	Summary
	SumPct float64 `json:"sum_pct"` // of every set's samples together
}

// StatsSet is a set's name and total.
type StatsSet struct {
	Name  string `json:"name"`
	Total uint64 `json:"total"`
}

// StatsTable is dcpistats's output as data.
type StatsTable struct {
	Event string     `json:"event"`
	By    By         `json:"by"`
	Sets  []StatsSet `json:"sets"`
	Total uint64     `json:"total"`
	Rows  []StatsRow `json:"rows"`
	// Small is how many rows MinSum dropped; Omitted how many Limit cut.
	Small   int `json:"small_rows"`
	Omitted int `json:"omitted_rows"`
}

// Stats computes dcpistats's table: each set's profile (Prof, one event),
// joined per procedure, summarized across the sets, sorted by normalized
// range descending (then sum descending, image, procedure), so the
// procedure whose samples vary most comes first — the paper's smooth_ in
// wave5.
func Stats(ctx context.Context, src analysis.Source, q StatsQuery) (*StatsTable, error) {
	if len(q.Sets) < 2 {
		return nil, fmt.Errorf("analysis: stats: %w: %d sample sets; want two or more", analysis.ErrQuery, len(q.Sets))
	}
	if q.Limit < 0 {
		return nil, fmt.Errorf("analysis: stats: %w: limit %d is negative", analysis.ErrQuery, q.Limit)
	}
	_, names, counts, totals, err := setRows(ctx, src, q.Sets, q.Event, q.ImagePaths, q.By)
	if err != nil {
		return nil, fmt.Errorf("analysis: stats: %w", err)
	}
	t := &StatsTable{Event: analysis.EventName(q.Event), By: q.By, Rows: make([]StatsRow, 0, len(names))}
	for i, s := range q.Sets {
		t.Sets = append(t.Sets, StatsSet{Name: s.Name, Total: totals[i]})
		t.Total = satAdd(t.Total, totals[i])
	}
	for i, n := range names {
		if sum := Summarize(counts[i]).Sum; sum < q.MinSum {
			t.Small++
			continue
		}
		r := StatsRow{Procedure: n.Procedure, Image: n.Image, Counts: counts[i], Summary: Summarize(counts[i])}
		if t.Total > 0 {
			r.SumPct = 100 * float64(r.Sum) / float64(t.Total)
		}
		t.Rows = append(t.Rows, r)
	}
	slices.SortFunc(t.Rows, func(a, b StatsRow) int {
		if c := cmp.Compare(b.RangePct, a.RangePct); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Sum, a.Sum); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Image, b.Image); c != 0 {
			return c
		}
		return cmp.Compare(a.Procedure, b.Procedure)
	})
	if q.Limit > 0 && len(t.Rows) > q.Limit {
		t.Omitted = len(t.Rows) - q.Limit
		t.Rows = t.Rows[:q.Limit]
	}
	return t, nil
}

// WriteText prints t as dcpistats did (Figure 3): the sets' totals,
// then per procedure range%, sum, sum%, N, mean, std-dev, min, max,
// procedure and image, with each set's count after them.
func (t *StatsTable) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Number of samples of type %s\n", t.Event)
	for i, s := range t.Sets {
		fmt.Fprintf(bw, "  set %d (%s) = %d\n", i+1, s.Name, s.Total)
	}
	fmt.Fprintf(bw, "  TOTAL %d\n\n", t.Total)
	what := "procedure"
	if t.By == ByImage {
		what = "image"
	}
	fmt.Fprintf(bw, "Statistics calculated using the sample counts for each %s from %d different sample set(s);\n", what, len(t.Sets))
	fmt.Fprintln(bw, "mean, std-dev (K-1), min and max are over all sets (0 where a set has none); N counts the sets with samples.")
	header := []string{"range%", "sum", "sum%", "N", "mean", "std-dev", "min", "max"}
	right := []bool{true, true, true, true, true, true, true, true}
	if t.By == ByProcedure {
		header = append(header, "procedure")
		right = append(right, false)
	}
	header = append(header, "image")
	right = append(right, false)
	for i := range t.Sets {
		header = append(header, "set"+strconv.Itoa(i+1))
		right = append(right, true)
	}
	// The image column is padded when set columns follow it.
	fmt.Fprintln(bw, strings.Repeat("=", 94))
	cells := [][]string{header}
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, r := range t.Rows {
		line := []string{f2(r.RangePct) + "%", strconv.FormatUint(r.Sum, 10), f2(r.SumPct) + "%", strconv.Itoa(r.N),
			f2(r.Mean), f2(r.StdDev), strconv.FormatUint(r.Min, 10), strconv.FormatUint(r.Max, 10)}
		if t.By == ByProcedure {
			line = append(line, r.Procedure)
		}
		line = append(line, r.Image)
		for _, c := range r.Counts {
			line = append(line, strconv.FormatUint(c, 10))
		}
		cells = append(cells, line)
	}
	if err := writeTable(bw, cells, right); err != nil {
		return err
	}
	if len(t.Rows) == 0 {
		fmt.Fprintln(bw, "(no samples)")
	}
	if t.Omitted > 0 {
		fmt.Fprintf(bw, "[%d more rows]\n", t.Omitted)
	}
	if t.Small > 0 {
		fmt.Fprintf(bw, "[%d rows with fewer samples not shown]\n", t.Small)
	}
	return bw.Flush()
}

// WriteJSON writes t as one indented JSON object: {"event", "by",
// "sets": [{"name", "total"}], "total", "rows": [{"procedure", "image",
// "counts", "sum", "n", "mean", "std_dev", "min", "max", "range_pct",
// "sum_pct"}], "omitted_rows"}, "counts" parallel to "sets".
func (t *StatsTable) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}
