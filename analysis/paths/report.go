package paths

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"sort"
	"strings"
)

// The rows of the path reports (dcpi pp oracle, dcpi pp counts): the
// oracle's ground truth and an instrumented run's counts share them.

// HotPath is one path of a report's hot paths, with its blocks.
type HotPath struct {
	Proc         string  `json:"procedure"`
	Entry        uint64  `json:"entry"`
	ID           uint64  `json:"path"`
	Count        uint64  `json:"count"`
	Instructions uint64  `json:"instructions"`
	Cycles       uint64  `json:"cycles"`
	IMiss        uint64  `json:"imiss"`
	DMiss        uint64  `json:"dmiss"`
	Blocks       []Block `json:"blocks"` // address ranges [start, end) in path order
	// Metrics are an instrumented path's own measurements (--metrics),
	// named by the report's metrics.
	Metrics []uint64 `json:"metrics,omitempty"`
}

// Block is an address range [Start, End) of a path, with its source line.
type Block struct {
	Start uint64 `json:"start"`
	End   uint64 `json:"end"`
	Line  string `json:"line,omitempty"`
}

// ProcRow is one row of the Table 5 shape: a procedure's paths.
type ProcRow struct {
	Proc         string  `json:"procedure"`
	Entry        uint64  `json:"entry"`
	Executed     int     `json:"paths_executed"`
	NumPaths     uint64  `json:"paths"` // 0: not numbered
	Unknown      uint64  `json:"unknown_activations,omitempty"`
	Instructions uint64  `json:"instructions"`
	Cycles       uint64  `json:"cycles"`
	InsnShare    float64 `json:"instruction_share"`
	CycleShare   float64 `json:"cycle_share"`
}

// LineTable maps addresses to source lines from an image's DWARF, when
// it has any.
type LineTable struct {
	addrs []uint64
	lines []string
}

// NewLineTable reads data's DWARF line table (empty when it has none).
func NewLineTable(data []byte) *LineTable {
	t := &LineTable{}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return t
	}
	d, err := f.DWARF()
	if err != nil {
		return t
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			line := "" // past a sequence's end: no line (glibc has no DWARF)
			if !le.EndSequence && le.File != nil {
				line = fmt.Sprintf("%s:%d", baseName(le.File.Name), le.Line)
			}
			t.addrs = append(t.addrs, le.Address)
			t.lines = append(t.lines, line)
		}
	}
	idx := make([]int, len(t.addrs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return t.addrs[idx[a]] < t.addrs[idx[b]] })
	addrs, lines := make([]uint64, len(idx)), make([]string, len(idx))
	for i, j := range idx {
		addrs[i], lines[i] = t.addrs[j], t.lines[j]
	}
	t.addrs, t.lines = addrs, lines
	return t
}

// At returns the line of the last entry at or before addr ("" if none).
func (t *LineTable) At(addr uint64) string {
	i := sort.Search(len(t.addrs), func(i int) bool { return t.addrs[i] > addr }) - 1
	if i < 0 {
		return ""
	}
	return t.lines[i]
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Share is x's fraction of of (0 when of is 0).
func Share(x, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return float64(x) / float64(of)
}
