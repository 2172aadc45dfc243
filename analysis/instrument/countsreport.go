package instrument

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// Write writes the block counts, most executed first (top > 0: only
// that many), with each block's share and procedure.
func (c *Counts) Write(w io.Writer, top int) error {
	type row struct {
		proc  string
		start uint64
		n     uint64
	}
	var rows []row
	var total uint64
	for _, p := range c.Manifest.Procs {
		for _, b := range p.Blocks {
			if n := c.Blocks[b.Start]; n > 0 {
				rows = append(rows, row{p.Name, b.Start, n})
				total += n
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		return rows[i].start < rows[j].start
	})
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	fmt.Fprintf(w, "%d records; %d block executions counted\n", c.Records, total)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "executions\tshare\taddress\t procedure")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%.2f%%\t%#x\t %s\n", r.n, 100*float64(r.n)/float64(max(total, 1)), r.start, r.proc)
	}
	return tw.Flush()
}
