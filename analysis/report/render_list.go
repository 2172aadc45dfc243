package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText prints l as dcpilist did: for each procedure a header with
// its image and totals, then one line per instruction — address, samples
// per event, disassembly — with each source line (file:line and its text)
// above the first instruction compiled from it. Column widths come from the
// totals, so lines are written as they are formatted.
func (l *Listing) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	totals := make([]string, len(l.Columns))
	for i, c := range l.Columns {
		totals[i] = fmt.Sprintf("%s = %d", c.Name, c.Total)
	}
	fmt.Fprintf(bw, "Total samples for event type %s\n", strings.Join(totals, ", "))
	width := make([]int, len(l.Columns))
	for i, c := range l.Columns {
		width[i] = max(len(c.Name), len(strconv.FormatUint(c.Total, 10)))
	}
	for _, p := range l.Procedures {
		fmt.Fprintf(bw, "\nProcedure %s in %s (%v)\n", p.Procedure, p.Image, p.ImageKey)
		fmt.Fprintf(bw, "  addresses %#x-%#x, %d instructions; disassembled from %s\n", p.Start, p.End, (p.End-p.Start+3)/4, p.File)
		var parts []string
		for i, c := range l.Columns {
			parts = append(parts, fmt.Sprintf("%s = %d (%.2f%%)", c.Name, p.Counts[i], p.Percent[i]))
		}
		fmt.Fprintf(bw, "  samples: %s\n", strings.Join(parts, ", "))
		if !p.HasLines {
			fmt.Fprintln(bw, "  (no DWARF line information in the image: no source lines)")
		}
		fmt.Fprintln(bw)
		aw := max(len(strconv.FormatUint(p.End, 16)), len("address"))
		var b strings.Builder
		b.WriteString(fmt.Sprintf("%*s", aw, "address"))
		for i, c := range l.Columns {
			b.WriteString(fmt.Sprintf("  %*s", width[i], c.Name))
		}
		b.WriteString("  instruction")
		fmt.Fprintln(bw, b.String())
		for _, ln := range p.Lines {
			b.Reset()
			if ln.File != "" {
				b.WriteString(fmt.Sprintf("%s:%d", ln.File, ln.Line))
				if ln.Text != "" {
					b.WriteString("  " + ln.Text)
				}
				fmt.Fprintln(bw, strings.TrimRight(b.String(), " "))
				continue
			}
			b.WriteString(fmt.Sprintf("%*x", aw, ln.Addr))
			for i := range l.Columns {
				b.WriteString(fmt.Sprintf("  %*d", width[i], ln.Counts[i]))
			}
			b.WriteString("  " + FormatInsn(ln.Insn))
			fmt.Fprintln(bw, strings.TrimRight(b.String(), " "))
		}
	}
	if len(l.Procedures) == 0 {
		fmt.Fprintln(bw, "(no procedures)")
	}
	return bw.Flush()
}

// FormatInsn pads the mnemonic of objdump's "mnemonic\toperands" to 8
// columns, as a listing in a table reads better with spaces; dcpicalc's
// listing pads alike.
func FormatInsn(s string) string {
	m, ops, ok := strings.Cut(s, "\t")
	if !ok {
		return s
	}
	return fmt.Sprintf("%-7s %s", m, ops)
}

// WriteJSON writes l as one indented JSON object: {"events":
// [{"event", "name", "total"}], "procedures": [{"procedure", "image",
// "image_key", "file", "start", "end", "counts", "percent", "lines":
// [{"file", "line", "text"} | {"addr", "word", "insn", "counts"}],
// "has_lines"}]}, counts parallel to "events".
func (l *Listing) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(l)
}
