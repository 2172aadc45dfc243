package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText prints t as dcpiprof did (Figure 1 of the paper): a line of
// totals per event, then one aligned line per row — for each event its
// count, % and cum%, then the procedure and the image (or only the image,
// by image). Numbers are right-aligned, percentages have two decimals. Rows
// that a limit cut are summed on one last line.
func (t *ProfTable) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if len(t.Columns) == 0 {
		fmt.Fprintln(bw, "Total samples: none (no sample matches the query)")
		return bw.Flush()
	}
	totals := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		totals[i] = fmt.Sprintf("%s = %d", c.Name, c.Total)
	}
	fmt.Fprintf(bw, "Total samples for event type %s\n\n", strings.Join(totals, ", "))

	// Cells: per event count, %, cum%; then procedure (by procedure) and
	// image. The last column is not padded.
	var header []string
	var right []bool
	for _, c := range t.Columns {
		header = append(header, c.Name, "%", "cum%")
		right = append(right, true, true, true)
	}
	if t.By == ByProcedure {
		header = append(header, "procedure")
		right = append(right, false)
	}
	header = append(header, "image")
	right = append(right, false)
	cells := [][]string{header}
	pct := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "%" }
	for _, r := range t.Rows {
		line := make([]string, 0, len(header))
		for i := range t.Columns {
			line = append(line, strconv.FormatUint(r.Counts[i], 10), pct(r.Percent[i]), pct(r.CumPercent[i]))
		}
		if t.By == ByProcedure {
			line = append(line, r.Procedure)
		}
		cells = append(cells, append(line, r.Image))
	}
	if t.Omitted > 0 {
		line := make([]string, 0, len(header))
		for i, c := range t.Columns {
			// Every row is either above or here, so cum% reaches 100.
			v := t.OmittedCounts[i]
			p, cum := 0.0, 0.0
			if c.Total > 0 {
				p, cum = 100*float64(v)/float64(c.Total), 100
			}
			line = append(line, strconv.FormatUint(v, 10), pct(p), pct(cum))
		}
		what := "procedures"
		if t.By == ByImage {
			what = "images"
		}
		more := fmt.Sprintf("[%d more %s]", t.Omitted, what)
		if t.By == ByProcedure {
			line = append(line, more, "")
		} else {
			line = append(line, more)
		}
		cells = append(cells, line)
	}
	width := make([]int, len(header))
	for _, line := range cells {
		for i, s := range line {
			width[i] = max(width[i], len(s))
		}
	}
	lineWidth := 0
	for _, n := range width {
		lineWidth += n + 2
	}
	fmt.Fprintln(bw, "The counts given below are the number of samples for each listed event type.")
	fmt.Fprintln(bw, strings.Repeat("=", max(lineWidth-2, 78)))
	if err := writeTable(bw, cells, right); err != nil {
		return err
	}
	if len(cells) == 1 {
		fmt.Fprintln(bw, "(no samples)")
	}
	return bw.Flush()
}

// WriteJSON writes t as one indented JSON object: {"by", "events": [{"event",
// "name", "total"}], "rows": [{"procedure", "image", "image_key", "counts",
// "percent", "cum_percent"}], "omitted_rows", "omitted_counts"}, with the
// per-row arrays parallel to "events".
func (t *ProfTable) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}
