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

	"dcpi/analysis"
)

// DefaultZ is Diff's default significance threshold: a change in share is
// reported as significant when it is at least 3 standard errors.
const DefaultZ = 3

// DiffQuery is a dcpidiff request: two profiles compared per procedure.
type DiffQuery struct {
	A, B       analysis.SampleSet
	Event      uint8
	ImagePaths []string
	By         By
	// Z is the significance threshold in standard errors (0: DefaultZ).
	Z float64
	// Limit keeps the first Limit rows; 0 keeps all.
	Limit int
}

// ShareChange is the comparison of one procedure's share of two profiles'
// samples.
//
// ProfileMe (sec. 5.1) shows that a count of k samples estimates its event
// count with a relative error (coefficient of variation) of 1/sqrt(k): the
// count's standard error is sqrt(k). A procedure's share of a profile of N
// samples, p = k/N, then has standard error sqrt(k)/N (N, the sum over
// every procedure, is known far better than k and is taken as exact). The
// two profiles are independent samples, so the difference of the shares,
// pB - pA, has standard error sqrt(kA/NA² + kB/NB²), and
//
//	Z = (pB - pA) / sqrt(kA/NA² + kB/NB²)
//
// is a z-score for the change: |Z| >= the threshold marks it significant.
// Both counts 0 gives Z = 0. (This is the two-proportion test with the
// Poisson variance k in place of the binomial k(1-p): slightly more
// conservative for a procedure holding a large share.)
type ShareChange struct {
	SharePctA   float64 `json:"share_pct_a"`
	SharePctB   float64 `json:"share_pct_b"`
	DeltaPct    float64 `json:"delta_pct"` // percentage points, B - A
	Z           float64 `json:"z"`
	Significant bool    `json:"significant"`
}

// CompareShares computes the ShareChange of counts kA of nA and kB of nB
// with significance threshold z (see ShareChange).
func CompareShares(kA, nA, kB, nB uint64, z float64) ShareChange {
	var c ShareChange
	var pA, pB, varA, varB float64
	if nA > 0 {
		pA = float64(kA) / float64(nA)
		varA = float64(kA) / (float64(nA) * float64(nA))
	}
	if nB > 0 {
		pB = float64(kB) / float64(nB)
		varB = float64(kB) / (float64(nB) * float64(nB))
	}
	c.SharePctA, c.SharePctB, c.DeltaPct = 100*pA, 100*pB, 100*(pB-pA)
	if se := math.Sqrt(varA + varB); se > 0 {
		c.Z = (pB - pA) / se
	}
	c.Significant = math.Abs(c.Z) >= z
	return c
}

// DiffRow is one procedure (or image) in both profiles.
type DiffRow struct {
	Procedure string `json:"procedure,omitempty"`
	Image     string `json:"image"`
	CountA    uint64 `json:"count_a"`
	CountB    uint64 `json:"count_b"`
	ShareChange
}

// DiffTable is dcpidiff's output as data.
type DiffTable struct {
	Event   string    `json:"event"`
	By      By        `json:"by"`
	A       StatsSet  `json:"a"`
	B       StatsSet  `json:"b"`
	Z       float64   `json:"z_threshold"`
	Rows    []DiffRow `json:"rows"`
	Quiet   int       `json:"insignificant_rows"` // rows whose change is below the threshold
	Omitted int       `json:"omitted_rows"`
}

// Diff compares two profiles per procedure: each one's share of its
// profile's samples of the event, the change in share, and its z-score
// (CompareShares). Rows are sorted significant changes first, each group
// by the size of the change descending (then image and procedure), so the
// largest real change comes first and noise last.
func Diff(ctx context.Context, src analysis.Source, q DiffQuery) (*DiffTable, error) {
	return DiffOf(ctx, src, src, q)
}

// DiffOf is Diff of set A in srcA and set B in srcB: two profile
// databases (dcpi diff OLD NEW, as perf diff compares two perf.data
// files). A procedure is matched by its image's key (the build ID) and
// name, so a program rebuilt between the two shows as another image.
func DiffOf(ctx context.Context, srcA, srcB analysis.Source, q DiffQuery) (*DiffTable, error) {
	if q.Limit < 0 {
		return nil, fmt.Errorf("analysis: diff: %w: limit %d is negative", analysis.ErrQuery, q.Limit)
	}
	z := q.Z
	if z == 0 {
		z = DefaultZ
	}
	if z < 0 || math.IsNaN(z) || math.IsInf(z, 0) {
		return nil, fmt.Errorf("analysis: diff: %w: threshold %v", analysis.ErrQuery, q.Z)
	}
	var names []ProfRow
	var counts [][]uint64
	var totals []uint64
	var err error
	if srcA == srcB {
		_, names, counts, totals, err = setRows(ctx, srcA, []analysis.SampleSet{q.A, q.B}, q.Event, q.ImagePaths, q.By)
	} else {
		names, counts, totals, err = joinRows(ctx, srcA, srcB, q)
	}
	if err != nil {
		return nil, fmt.Errorf("analysis: diff: %w", err)
	}
	t := &DiffTable{Event: analysis.EventName(q.Event), By: q.By, A: StatsSet{q.A.Name, totals[0]}, B: StatsSet{q.B.Name, totals[1]}, Z: z,
		Rows: make([]DiffRow, 0, len(names))}
	for i, n := range names {
		r := DiffRow{Procedure: n.Procedure, Image: n.Image, CountA: counts[i][0], CountB: counts[i][1],
			ShareChange: CompareShares(counts[i][0], totals[0], counts[i][1], totals[1], z)}
		if !r.Significant {
			t.Quiet++
		}
		t.Rows = append(t.Rows, r)
	}
	slices.SortFunc(t.Rows, func(a, b DiffRow) int {
		if a.Significant != b.Significant {
			if a.Significant {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(math.Abs(b.DeltaPct), math.Abs(a.DeltaPct)); c != 0 {
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

// WriteText prints t: the two profiles' totals, the rule, then per
// procedure the counts and shares in A and B, the change in percentage
// points and its z-score, insignificant changes marked "~".
func (t *DiffTable) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Samples of type %s: A (%s) = %d, B (%s) = %d\n", t.Event, t.A.Name, t.A.Total, t.B.Name, t.B.Total)
	fmt.Fprintf(bw, "share = the procedure's %% of its profile; delta = B - A in points; z = delta / sqrt(kA/NA^2 + kB/NB^2)\n")
	fmt.Fprintf(bw, "(ProfileMe sec. 5.1: k samples have relative error 1/sqrt(k)); ~ marks |z| < %g: not a significant change\n", t.Z)
	if t.A.Total == 0 || t.B.Total == 0 {
		fmt.Fprintln(bw, "(one profile has no samples: every share there is 0)")
	}
	header := []string{"A", "A%", "B", "B%", "delta", "z", ""}
	right := []bool{true, true, true, true, true, true, false}
	if t.By == ByProcedure {
		header = append(header, "procedure")
		right = append(right, false)
	}
	header = append(header, "image")
	right = append(right, false)
	fmt.Fprintln(bw, "==============================================================================")
	cells := [][]string{header}
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, r := range t.Rows {
		mark := ""
		if !r.Significant {
			mark = "~"
		}
		delta := f2(r.DeltaPct)
		if r.DeltaPct > 0 {
			delta = "+" + delta
		}
		line := []string{strconv.FormatUint(r.CountA, 10), f2(r.SharePctA) + "%", strconv.FormatUint(r.CountB, 10), f2(r.SharePctB) + "%",
			delta, strconv.FormatFloat(r.Z, 'f', 1, 64), mark}
		if t.By == ByProcedure {
			line = append(line, r.Procedure)
		}
		cells = append(cells, append(line, r.Image))
	}
	if err := writeTable(bw, cells, right); err != nil {
		return err
	}
	if len(t.Rows) == 0 {
		fmt.Fprintln(bw, "(no samples)")
	}
	fmt.Fprintf(bw, "%d of %d rows changed significantly", len(t.Rows)+t.Omitted-t.Quiet, len(t.Rows)+t.Omitted)
	if t.Omitted > 0 {
		fmt.Fprintf(bw, "; %d more rows not shown", t.Omitted)
	}
	fmt.Fprintln(bw)
	return bw.Flush()
}

// WriteJSON writes t as one indented JSON object: {"event", "by", "a":
// {"name", "total"}, "b", "z_threshold", "rows": [{"procedure", "image",
// "count_a", "count_b", "share_pct_a", "share_pct_b", "delta_pct", "z",
// "significant"}], "insignificant_rows", "omitted_rows"}.
func (t *DiffTable) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}

// joinRows is setRows over two sources, set A in srcA and set B in srcB.
func joinRows(ctx context.Context, srcA, srcB analysis.Source, q DiffQuery) (names []ProfRow, counts [][]uint64, totals []uint64, err error) {
	index := map[procKey]int{}
	totals = make([]uint64, 2)
	for i, side := range []struct {
		src analysis.Source
		set analysis.SampleSet
	}{{srcA, q.A}, {srcB, q.B}} {
		keys, n, c, t, err := setRows(ctx, side.src, []analysis.SampleSet{side.set}, q.Event, q.ImagePaths, q.By)
		if err != nil {
			return nil, nil, nil, err
		}
		totals[i] = t[0]
		for k, key := range keys {
			j, ok := index[key]
			if !ok {
				j = len(names)
				index[key] = j
				names = append(names, n[k])
				counts = append(counts, make([]uint64, 2))
			}
			counts[j][i] = c[k][0]
		}
	}
	return names, counts, totals, nil
}
