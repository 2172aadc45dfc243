package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts []uint64
		want   Summary
	}{
		{"empty", nil, Summary{}},
		{"one set", []uint64{7}, Summary{Sum: 7, N: 1, Mean: 7, Min: 7, Max: 7}},
		{"constant", []uint64{5, 5, 5, 5}, Summary{Sum: 20, N: 4, Mean: 5, Min: 5, Max: 5}},
		// mean 5, squares 9+1+1+9 = 20, /3.
		{"spread", []uint64{2, 4, 6, 8}, Summary{Sum: 20, N: 4, Mean: 5, StdDev: math.Sqrt(20.0 / 3), Min: 2, Max: 8, RangePct: 30}},
		// A set without samples counts 0 and does not count in N.
		{"vanishes", []uint64{10, 0, 10}, Summary{Sum: 20, N: 2, Mean: 20.0 / 3, StdDev: math.Sqrt((2*(10.0/3)*(10.0/3) + (20.0/3)*(20.0/3)) / 2), Min: 0, Max: 10, RangePct: 50}},
		{"all zero", []uint64{0, 0}, Summary{}},
		// The paper's smooth_ row (Figure 3): range 88075-38155 over sum 441040 = 11.32%.
		{"wave5 smooth_", []uint64{38155, 88075, 52468, 52468, 52468, 52468, 52468, 52470}, Summary{}},
	} {
		got := Summarize(tc.counts)
		if tc.name == "wave5 smooth_" {
			if math.Abs(got.RangePct-11.32) > 0.005 {
				t.Errorf("%s: range%% %.4f, want 11.32", tc.name, got.RangePct)
			}
			continue
		}
		if got.Sum != tc.want.Sum || got.N != tc.want.N || got.Min != tc.want.Min || got.Max != tc.want.Max ||
			!near(got.Mean, tc.want.Mean) || !near(got.StdDev, tc.want.StdDev) || !near(got.RangePct, tc.want.RangePct) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestStatsSortsByNormalizedRange(t *testing.T) {
	src := fixture()
	sets := []analysis.SampleSet{{Name: "epoch=1", Filter: storage.Query{Epochs: []uint64{1}}}, {Name: "epoch=2", Filter: storage.Query{Epochs: []uint64{2}}}}
	tb, err := Stats(t.Context(), src, StatsQuery{Sets: sets, Event: evCycles})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(tb.Rows); i++ {
		if tb.Rows[i-1].RangePct < tb.Rows[i].RangePct {
			t.Errorf("row %d range%% %.2f above %.2f", i, tb.Rows[i-1].RangePct, tb.Rows[i].RangePct)
		}
	}
	var total uint64
	for _, s := range tb.Sets {
		total += s.Total
	}
	var sum uint64
	for _, r := range tb.Rows {
		sum += r.Sum
	}
	if total != tb.Total || sum != total || total != 1151 {
		t.Errorf("sets total %d, rows %d, table %d", total, sum, tb.Total)
	}
	var buf bytes.Buffer
	if err := tb.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "stats_epochs.txt", buf.Bytes())
	buf.Reset()
	if err := tb.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back StatsTable
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Rows) != len(tb.Rows) || back.Rows[0].RangePct != tb.Rows[0].RangePct {
		t.Errorf("JSON: %v %+v", err, back)
	}
	hosts := []analysis.SampleSet{{Name: "host=alpha", Filter: storage.Query{Hosts: []string{"alpha"}}},
		{Name: "host=beta", Filter: storage.Query{Hosts: []string{"beta"}}}, {Name: "host=gamma", Filter: storage.Query{Hosts: []string{"gamma"}}}}
	tb, err = Stats(t.Context(), src, StatsQuery{Sets: hosts, Event: evCycles, By: ByImage, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	tb.WriteText(&buf)
	golden(t, "stats_hosts_by_image.txt", buf.Bytes())
	for _, q := range []StatsQuery{{Sets: sets[:1]}, {Sets: sets, Limit: -1}} {
		if _, err := Stats(t.Context(), src, q); !errors.Is(err, analysis.ErrQuery) {
			t.Errorf("%+v: err %v", q, err)
		}
	}
}

func TestCompareShares(t *testing.T) {
	for _, tc := range []struct {
		name           string
		kA, nA, kB, nB uint64
		z              float64 // want
		sig            bool    // at DefaultZ
	}{
		{"no samples", 0, 100, 0, 100, 0, false},
		{"same share", 100, 1000, 200, 2000, 0, false},
		// pA = 0.1, pB = 0.2, se = sqrt(100/1e6 + 200/1e6) = 0.01732: z = 5.77.
		{"doubled", 100, 1000, 200, 1000, 0.1 / math.Sqrt(300e-6), true},
		// A few samples: 2 -> 4 of 100 is z = 0.02/sqrt(6e-4) = 0.82, noise.
		{"small counts", 2, 100, 4, 100, 0.02 / math.Sqrt(6e-4), false},
		{"vanished", 50, 1000, 0, 1000, -0.05 / math.Sqrt(50e-6), true},
		{"appeared once", 0, 1000, 1, 1000, 1, false},
		{"empty A", 0, 0, 10, 100, 0.1 / math.Sqrt(10e-4), true},
	} {
		c := CompareShares(tc.kA, tc.nA, tc.kB, tc.nB, DefaultZ)
		if !near(c.Z, tc.z) || c.Significant != tc.sig {
			t.Errorf("%s: z %.4f significant %v, want %.4f %v", tc.name, c.Z, c.Significant, tc.z, tc.sig)
		}
		if tc.nA > 0 && tc.nB > 0 && !near(c.DeltaPct, c.SharePctB-c.SharePctA) {
			t.Errorf("%s: delta %v", tc.name, c.DeltaPct)
		}
	}
}

func TestDiffOrdersSignificantChangesFirst(t *testing.T) {
	src := fixture()
	a := analysis.SampleSet{Name: "host=alpha", Filter: storage.Query{Hosts: []string{"alpha"}}}
	b := analysis.SampleSet{Name: "host=beta", Filter: storage.Query{Hosts: []string{"beta"}}}
	tb, err := Diff(t.Context(), src, DiffQuery{A: a, B: b, Event: evCycles})
	if err != nil {
		t.Fatal(err)
	}
	seenQuiet := false
	for i, r := range tb.Rows {
		if !r.Significant {
			seenQuiet = true
		} else if seenQuiet {
			t.Errorf("significant row %d after an insignificant one", i)
		}
		if i > 0 && tb.Rows[i-1].Significant == r.Significant && math.Abs(tb.Rows[i-1].DeltaPct) < math.Abs(r.DeltaPct) {
			t.Errorf("row %d: |delta| %.2f above %.2f", i, tb.Rows[i-1].DeltaPct, r.DeltaPct)
		}
	}
	var buf bytes.Buffer
	if err := tb.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "diff_hosts.txt", buf.Bytes())
	buf.Reset()
	if err := tb.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back DiffTable
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Rows) != len(tb.Rows) || back.Rows[0] != tb.Rows[0] {
		t.Errorf("JSON: %v %+v", err, back)
	}
	// A profile against itself changes nothing.
	tb, err = Diff(t.Context(), src, DiffQuery{A: a, B: a, Event: evCycles, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if tb.Quiet != tb.Omitted+1 || tb.Rows[0].Z != 0 {
		t.Errorf("self diff %+v", tb)
	}
	for _, q := range []DiffQuery{{Z: -1}, {Limit: -1}, {Z: math.NaN()}} {
		if _, err := Diff(t.Context(), src, q); !errors.Is(err, analysis.ErrQuery) {
			t.Errorf("%+v: err %v", q, err)
		}
	}
}

// TestSetTablesOneScanMatchesPerSet checks the one-scan path of sets of one
// host each against a Prof per set.
func TestSetTablesOneScanMatchesPerSet(t *testing.T) {
	src := fixture()
	var sets []analysis.SampleSet
	for _, h := range []string{"gamma", "alpha", "beta"} {
		sets = append(sets, analysis.SampleSet{Name: h, Filter: storage.Query{Hosts: []string{h}, Epochs: []uint64{1, 2}}})
	}
	for _, by := range []By{ByProcedure, ByImage} {
		got, err := setTables(t.Context(), symbolize.New(src), sets, evCycles, nil, by)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sets {
			want, err := Prof(t.Context(), src, ProfQuery{Filter: s.Filter, Events: []uint8{evCycles}, By: by})
			if err != nil {
				t.Fatal(err)
			}
			var a, b bytes.Buffer
			got[i].WriteText(&a)
			want.WriteText(&b)
			if a.String() != b.String() {
				t.Errorf("%v set %s: one scan\n%s\nper set\n%s", by, s.Name, a.String(), b.String())
			}
		}
	}
	if !sameButHosts(storage.Query{Epochs: []uint64{1}}, storage.Query{Epochs: []uint64{1}, Hosts: []string{"x"}}) ||
		sameButHosts(storage.Query{Epochs: []uint64{}}, storage.Query{}) || sameButHosts(storage.Query{PIDs: []uint32{1}}, storage.Query{}) {
		t.Error("sameButHosts")
	}
}
