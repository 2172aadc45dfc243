package report

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/alpha/disasm"
	"dcpi/storage"
	"dcpi/wire"
)

// ListQuery is a dcpilist request: procedures to list, and the samples to
// annotate them with.
type ListQuery struct {
	// Filter, Events and ImagePaths select samples as in ProfQuery.
	Filter     storage.Query
	Events     []uint8
	ImagePaths []string
	// Procedures are the names to list. Every image with samples in a
	// procedure of that name is listed (narrow with ImagePaths or
	// Filter.Images).
	Procedures []string
	// Files finds the images' bytes; required.
	Files symbolize.ImageFinder
	// Source returns a source file's text for the interleaved lines, or
	// an error when it cannot be found; nil lists file:line without text.
	Source func(file string) ([]byte, error)
}

// Listing is dcpilist's output as data: the event columns (with totals over
// the listed procedures) and each procedure's annotated instructions.
type Listing struct {
	Columns    []ProfColumn `json:"events"`
	Procedures []ListProc   `json:"procedures"`
}

// ListProc is one procedure of one image.
type ListProc struct {
	Procedure string        `json:"procedure"`
	Image     string        `json:"image"`
	ImageKey  wire.ImageKey `json:"image_key"`
	File      string        `json:"file"`  // where its bytes were found
	Start     uint64        `json:"start"` // address of the first instruction
	End       uint64        `json:"end"`   // address past the last
	// Counts are the procedure's samples per column; Percent their share
	// of the column's samples in the whole selection (every image).
	Counts  []uint64   `json:"counts"`
	Percent []float64  `json:"percent"`
	Lines   []ListLine `json:"lines"`
	// HasLines is whether the image has DWARF line information.
	HasLines bool `json:"has_lines"`
}

// ListLine is one line of a listing: an instruction with its samples, or,
// before the first instruction of a source line, that source line.
type ListLine struct {
	// Source line (File != ""): its position and text, "" when the file
	// was not found.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Text string `json:"text,omitempty"`
	// Instruction (File == ""): address, word, disassembly, samples per
	// column.
	Addr   uint64   `json:"addr,omitempty"`
	Word   uint32   `json:"word,omitempty"`
	Insn   string   `json:"insn,omitempty"`
	Counts []uint64 `json:"counts,omitempty"`
}

// List computes dcpilist's listing: for each procedure of q that has
// samples, its instructions in address order, each with its samples per
// event, the source line before the instructions it begins (when the image
// has DWARF line information), and the procedure's totals. The procedures
// are found with Prof over q's selection; their samples are then read from
// the image's part of the index only.
func List(ctx context.Context, src analysis.Source, q ListQuery) (*Listing, error) {
	if len(q.Procedures) == 0 {
		return nil, fmt.Errorf("analysis: list: %w: no procedure named", analysis.ErrQuery)
	}
	if q.Files == nil {
		return nil, fmt.Errorf("analysis: list: %w: no image finder", analysis.ErrQuery)
	}
	for _, p := range q.Procedures {
		if p == symbolize.UnknownProcedure {
			return nil, fmt.Errorf("analysis: list: %w: %s has no instructions to list (it is where no symbol covers)", analysis.ErrQuery, p)
		}
	}
	syms := symbolize.New(src)
	t, err := Prof(ctx, syms, ProfQuery{Filter: q.Filter, Events: q.Events, ImagePaths: q.ImagePaths})
	if err != nil {
		return nil, fmt.Errorf("analysis: list: %w", err)
	}
	l := &Listing{Columns: t.Columns}
	events := make([]uint8, len(t.Columns))
	for i, c := range t.Columns {
		events[i] = c.Event
	}
	found := map[string]bool{}
	for _, r := range t.Rows {
		if !slices.Contains(q.Procedures, r.Procedure) {
			continue
		}
		found[r.Procedure] = true
		procs, err := listProcedure(ctx, syms, q, events, r)
		if err != nil {
			return nil, err
		}
		for i := range procs {
			p := &procs[i]
			p.Percent = make([]float64, len(p.Counts))
			for c, v := range p.Counts {
				if tot := t.Columns[c].Total; tot > 0 {
					p.Percent[c] = 100 * float64(v) / float64(tot)
				}
			}
		}
		l.Procedures = append(l.Procedures, procs...)
	}
	var missing []string
	for _, p := range q.Procedures {
		if !found[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("analysis: list: %w: no samples in procedure %s in the selected profile", analysis.ErrQuery, strings.Join(missing, ", "))
	}
	return l, nil
}

// listProcedure lists every symbol named r.Procedure in r's image (aliases
// and same-named statics share a Prof row; each has its own extent).
func listProcedure(ctx context.Context, syms *symbolize.Symbolizer, q ListQuery, events []uint8, r ProfRow) ([]ListProc, error) {
	rec, err := syms.Image(ctx, r.ImageKey)
	if err != nil {
		return nil, fmt.Errorf("analysis: list %s: %w", r.Procedure, err)
	}
	table, err := syms.Table(ctx, r.ImageKey)
	if err != nil {
		return nil, err
	}
	data, where, err := q.Files.FindImage(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("analysis: list %s in %s: %w", r.Procedure, rec.Path, err)
	}
	// A real machine's image (dcpi profile --linux) or a simulated Alpha's.
	nf, native, err := symbolize.OpenNativeFile(rec, data, where)
	var f *symbolize.ImageFile
	if !native && err == nil {
		f, err = symbolize.OpenImageFile(rec, data, where)
	}
	if err != nil {
		return nil, err
	}
	hasLines, lineOf := nf.HasLines, nf.Line
	if f != nil {
		hasLines, lineOf = f.HasLines, f.Line
	}
	// The image's samples, per offset, from its part of the index.
	fq := q.Filter
	fq.Images = []wire.ImageKey{r.ImageKey}
	fq.Events = events
	col := map[uint8]int{}
	for i, e := range events {
		col[e] = i
	}
	var procs []ListProc
	byOffset := map[uint64][]uint64{}
	for i, s := range table.Symbols() {
		if s.Name != r.Procedure {
			continue
		}
		// Instructions the symbol covers: those whose lookup names it
		// (an inner symbol takes its own).
		p := ListProc{Procedure: s.Name, Image: rec.Path, ImageKey: rec.Key, File: where, Start: s.Addr, End: table.End(i),
			Counts: make([]uint64, len(events)), HasLines: hasLines()}
		procs = append(procs, p)
	}
	if len(procs) == 0 {
		return nil, nil
	}
	lo, hi := procs[0].Start, procs[0].End
	for _, p := range procs[1:] {
		lo, hi = min(lo, p.Start), max(hi, p.End)
	}
	err = syms.Profile(ctx, fq, func(_ wire.ImageKey, offset uint64, event uint8, _ string, count uint64) error {
		addr := table.Base + offset
		if addr < lo || addr >= hi {
			return nil
		}
		c := byOffset[offset]
		if c == nil {
			c = make([]uint64, len(events))
			byOffset[offset] = c
		}
		c[col[event]] = satAdd(c[col[event]], count)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("analysis: list %s: %w", r.Procedure, err)
	}
	src := NewSourceLines(q.Source)
	for i := range procs {
		p := &procs[i]
		lastFile, lastLine := "", 0
		start, step := p.Start&^3, uint64(4)
		if f == nil {
			start = p.Start // variable-length instructions from the symbol's first
		}
		for addr := start; addr < p.End; addr += step {
			if i, _, ok := table.Index(addr - table.Base); !ok || table.Symbol(i).Name != p.Procedure || table.Symbol(i).Addr != p.Start {
				continue // an inner symbol's instruction
			}
			if file, line, ok := lineOf(addr); ok && (file != lastFile || line != lastLine) {
				p.Lines = append(p.Lines, ListLine{File: file, Line: line, Text: src.Line(file, line)})
				lastFile, lastLine = file, line
			}
			ln := ListLine{Addr: addr, Counts: make([]uint64, len(events))}
			if c := byOffset[addr-table.Base]; c != nil {
				copy(ln.Counts, c)
				for j, v := range c {
					p.Counts[j] = satAdd(p.Counts[j], v)
				}
			}
			if f == nil {
				var n int
				ln.Insn, n, ln.Word = nf.Insn(addr, func(a uint64) (string, uint64) {
					if i, _, ok := table.Index(a - table.Base); ok {
						return table.Symbol(i).Name, table.Symbol(i).Addr
					}
					return "", 0
				})
				step = uint64(max(n, 1))
			} else if w, ok := f.Word(addr); ok {
				ln.Word = w
				ln.Insn = disasm.Insn(w, addr, f.ELF)
			} else {
				ln.Insn = "(no bytes in the image file)"
			}
			p.Lines = append(p.Lines, ln)
		}
	}
	return procs, nil
}

// SourceLines reads each source file once, for the lines a listing
// interleaves with its instructions (dcpicalc's listing shares it).
type SourceLines struct {
	read  func(string) ([]byte, error)
	files map[string][][]byte // nil entry: not found
}

// NewSourceLines reads files with read; a nil read finds no file.
func NewSourceLines(read func(string) ([]byte, error)) *SourceLines {
	return &SourceLines{read: read, files: map[string][][]byte{}}
}

// Line is the text of line n (from 1) of file, without its newline and
// with tabs expanded to 8 columns; "" if the file or line is not there.
func (c *SourceLines) Line(file string, n int) string {
	if c.read == nil {
		return ""
	}
	lines, ok := c.files[file]
	if !ok {
		if data, err := c.read(file); err == nil {
			lines = bytes.Split(data, []byte("\n"))
		}
		c.files[file] = lines
	}
	if n < 1 || n > len(lines) {
		return ""
	}
	return expandTabs(strings.TrimRight(string(lines[n-1]), "\r"))
}

func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}
