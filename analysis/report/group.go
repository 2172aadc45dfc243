package report

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// GroupTable is a profile grouped by a label's values (dcpi prof --by
// LABEL): one row per value with its samples per event. The caller
// counts each group (a group is the hosts that carry the value); the
// table only orders the rows and computes the shares.
//
// Its JSON form is the machine interface of dcpi prof --by LABEL.
type GroupTable struct {
	Label   string       `json:"label"`
	Columns []ProfColumn `json:"events"`
	Rows    []GroupRow   `json:"rows"`
	// Omitted is how many values Limit cut, and OmittedCounts their
	// samples per column, so the table still sums to the selection.
	Omitted       int      `json:"omitted_rows"`
	OmittedCounts []uint64 `json:"omitted_counts,omitempty"`
}

// GroupRow is one value of the label.
type GroupRow struct {
	// Value is the label's value; "" for hosts without the label.
	Value string   `json:"value"`
	Hosts []string `json:"hosts"`
	// Counts, Percent and CumPercent are parallel to GroupTable.Columns,
	// as ProfRow's are.
	Counts     []uint64  `json:"counts"`
	Percent    []float64 `json:"percent"`
	CumPercent []float64 `json:"cum_percent"`
}

// NewGroupTable makes the table of rows (Value, Hosts and Counts set)
// over columns, whose totals are the rows' sums: the groups partition
// the selection. Rows without samples are left out; the rest are sorted
// by the first column's count descending, then by value.
func NewGroupTable(label string, columns []ProfColumn, rows []GroupRow) *GroupTable {
	t := &GroupTable{Label: label, Columns: slices.Clone(columns), Rows: []GroupRow{}}
	for i := range t.Columns {
		t.Columns[i].Total = 0
	}
	for _, r := range rows {
		var n uint64
		for i := range t.Columns {
			t.Columns[i].Total += r.Counts[i]
			n += r.Counts[i]
		}
		if n > 0 {
			t.Rows = append(t.Rows, r)
		}
	}
	slices.SortFunc(t.Rows, func(a, b GroupRow) int {
		for i := range a.Counts {
			if c := cmp.Compare(b.Counts[i], a.Counts[i]); c != 0 {
				return c
			}
		}
		return strings.Compare(a.Value, b.Value)
	})
	cum := make([]uint64, len(t.Columns))
	for ri := range t.Rows {
		r := &t.Rows[ri]
		r.Percent, r.CumPercent = make([]float64, len(t.Columns)), make([]float64, len(t.Columns))
		for i, c := range t.Columns {
			cum[i] += r.Counts[i]
			if c.Total > 0 {
				r.Percent[i] = 100 * float64(r.Counts[i]) / float64(c.Total)
				r.CumPercent[i] = 100 * float64(cum[i]) / float64(c.Total)
			}
		}
	}
	return t
}

// Limit keeps the top n rows (0: all) and folds the rest into Omitted
// and OmittedCounts, as dcpi prof --limit does for procedures. The
// shares of the rows kept do not change: they are of the whole
// selection.
func (t *GroupTable) Limit(n int) {
	if n <= 0 || len(t.Rows) <= n {
		return
	}
	t.Omitted += len(t.Rows) - n
	if t.OmittedCounts == nil {
		t.OmittedCounts = make([]uint64, len(t.Columns))
	}
	for _, r := range t.Rows[n:] {
		for i, v := range r.Counts {
			t.OmittedCounts[i] += v
		}
	}
	t.Rows = t.Rows[:n]
}

// WriteText prints t as dcpiprof's table, a row per value: the totals
// line, then per event its count, % and cum%, then the value and the
// hosts that carry it. A value of "" prints as "(no LABEL)".
func (t *GroupTable) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if len(t.Rows) == 0 {
		fmt.Fprintln(bw, "Total samples: none (no sample matches the query)")
		return bw.Flush()
	}
	totals := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		totals[i] = fmt.Sprintf("%s = %d", c.Name, c.Total)
	}
	fmt.Fprintf(bw, "Total samples for event type %s, by %s\n\n", strings.Join(totals, ", "), t.Label)
	var header []string
	var right []bool
	for _, c := range t.Columns {
		header = append(header, c.Name, "%", "cum%")
		right = append(right, true, true, true)
	}
	header = append(header, t.Label, "hosts")
	right = append(right, false, false)
	cells := [][]string{header}
	pct := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "%" }
	for _, r := range t.Rows {
		line := make([]string, 0, len(header))
		for i := range t.Columns {
			line = append(line, strconv.FormatUint(r.Counts[i], 10), pct(r.Percent[i]), pct(r.CumPercent[i]))
		}
		v := r.Value
		if v == "" {
			v = "(no " + t.Label + ")"
		}
		cells = append(cells, append(line, v, strings.Join(r.Hosts, ",")))
	}
	if t.Omitted > 0 {
		line := make([]string, 0, len(header))
		for i, c := range t.Columns {
			// Every value is above or here, so cum% reaches 100.
			p, cum := 0.0, 0.0
			if c.Total > 0 {
				p, cum = 100*float64(t.OmittedCounts[i])/float64(c.Total), 100
			}
			line = append(line, strconv.FormatUint(t.OmittedCounts[i], 10), pct(p), pct(cum))
		}
		cells = append(cells, append(line, fmt.Sprintf("[%d more values]", t.Omitted), ""))
	}
	lineWidth := 0
	for i := range header {
		n := 0
		for _, line := range cells {
			n = max(n, len(line[i]))
		}
		lineWidth += n + 2
	}
	fmt.Fprintln(bw, "The counts given below are the number of samples for each listed event type.")
	fmt.Fprintln(bw, strings.Repeat("=", max(lineWidth-2, 78)))
	if err := writeTable(bw, cells, right); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteJSON writes t as one indented JSON object: {"label", "events":
// [{"event", "name", "total"}], "rows": [{"value", "hosts", "counts",
// "percent", "cum_percent"}]}, the per-row arrays parallel to "events".
func (t *GroupTable) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}
