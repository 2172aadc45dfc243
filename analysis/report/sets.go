package report

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// procKey identifies a row across sets: a procedure of an image (or the
// image, by image).
type procKey struct {
	image wire.ImageKey
	proc  string
}

// setRows runs Prof for each set (one event, every row) and joins the rows
// by image and procedure. counts[k][i] is row k's count in set i; totals[i]
// is set i's total.
func setRows(ctx context.Context, src analysis.Source, sets []analysis.SampleSet, event uint8, paths []string, by By) (keys []procKey, names []ProfRow, counts [][]uint64, totals []uint64, err error) {
	syms := symbolize.New(src)
	index := map[procKey]int{}
	totals = make([]uint64, len(sets))
	tables, err := setTables(ctx, syms, sets, event, paths, by)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	for i, t := range tables {
		totals[i] = t.Columns[0].Total
		for _, r := range t.Rows {
			k := procKey{r.ImageKey, r.Procedure}
			j, ok := index[k]
			if !ok {
				j = len(keys)
				index[k] = j
				keys = append(keys, k)
				names = append(names, ProfRow{Procedure: r.Procedure, Image: r.Image, ImageKey: r.ImageKey})
				counts = append(counts, make([]uint64, len(sets)))
			}
			counts[j][i] = r.Counts[0]
		}
	}
	return keys, names, counts, totals, nil
}

// setTables runs Prof for each set. When the sets are one host each and
// otherwise the same selection (dcpistats --by-host, dcpidiff of two hosts)
// it reads the per-host table once for all of them, routing each row to its
// host's set, instead of once per set.
func setTables(ctx context.Context, syms *symbolize.Symbolizer, sets []analysis.SampleSet, event uint8, paths []string, by By) ([]*ProfTable, error) {
	tables := make([]*ProfTable, len(sets))
	hostSet := map[string]int{}
	for i, s := range sets {
		if len(s.Filter.Hosts) != 1 || !sameButHosts(s.Filter, sets[0].Filter) {
			hostSet = nil
			break
		}
		if _, dup := hostSet[s.Filter.Hosts[0]]; dup {
			hostSet = nil
			break
		}
		hostSet[s.Filter.Hosts[0]] = i
	}
	if len(sets) < 2 || hostSet == nil {
		for i, s := range sets {
			t, err := Prof(ctx, syms, ProfQuery{Filter: s.Filter, Events: []uint8{event}, ImagePaths: paths, By: by})
			if err != nil {
				return nil, err
			}
			tables[i] = t
		}
		return tables, nil
	}
	profs := make([]*profiler, len(sets))
	var sq storage.Query
	for i, s := range sets {
		p, q, err := newProfiler(syms, ProfQuery{Filter: s.Filter, Events: []uint8{event}, ImagePaths: paths, By: by})
		if err != nil {
			return nil, err
		}
		profs[i], sq = p, q
	}
	sq.Hosts = make([]string, 0, len(sets))
	for _, s := range sets {
		sq.Hosts = append(sq.Hosts, s.Filter.Hosts[0])
	}
	err := syms.Profile(ctx, sq, func(image wire.ImageKey, offset uint64, ev uint8, host string, count uint64) error {
		i, ok := hostSet[host]
		if !ok {
			return fmt.Errorf("analysis: profile row of host %q, not asked for", host)
		}
		return profs[i].add(ctx, image, offset, ev, host, count)
	})
	if err != nil {
		return nil, fmt.Errorf("analysis: prof: %w", err)
	}
	for i, p := range profs {
		tables[i] = p.table(0)
	}
	return tables, nil
}

// sameButHosts reports whether a and b select the same epochs, events,
// images and PIDs (nil, every one, differs from empty, none).
func sameButHosts(a, b storage.Query) bool {
	return eqSel(a.Epochs, b.Epochs) && eqSel(a.Events, b.Events) && eqSel(a.Images, b.Images) && eqSel(a.PIDs, b.PIDs)
}

func eqSel[T comparable](a, b []T) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

// writeTable writes cells as aligned columns two spaces apart: right[i]
// right-aligns column i; the last column is not padded.
func writeTable(w io.Writer, cells [][]string, right []bool) error {
	width := make([]int, len(right))
	for _, line := range cells {
		for i, s := range line {
			width[i] = max(width[i], len(s))
		}
	}
	var b strings.Builder
	for _, line := range cells {
		b.Reset()
		for i, s := range line {
			pad := strings.Repeat(" ", width[i]-len(s))
			switch {
			case right[i]:
				b.WriteString(pad + s)
			case i < len(line)-1:
				b.WriteString(s + pad)
			default:
				b.WriteString(s)
			}
			if i < len(line)-1 {
				b.WriteString("  ")
			}
		}
		if _, err := io.WriteString(w, strings.TrimRight(b.String(), " ")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// satAdd is a + b saturated: a count never wraps to a small number.
func satAdd(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return ^uint64(0)
	}
	return s
}
