package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"slices"
	"strings"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

type wantRow struct {
	proc, image string
	counts      []uint64
}

func rowsOf(t *ProfTable) []wantRow {
	var out []wantRow
	for _, r := range t.Rows {
		out = append(out, wantRow{r.Procedure, r.Image, r.Counts})
	}
	return out
}

func TestProfRowsAndFilters(t *testing.T) {
	unknown9 := testKey(9).String()
	for _, tc := range []struct {
		name   string
		q      ProfQuery
		cols   []string
		totals []uint64
		rows   []wantRow
	}{
		{
			name:   "fleet, every event, by procedure",
			q:      ProfQuery{},
			cols:   []string{"cycles", "imiss", "dmiss"},
			totals: []uint64{1151, 95, 9},
			rows: []wantRow{
				{"work", "/bin/app", []uint64{400, 30, 0}},
				{"idle", "/vmunix", []uint64{300, 0, 0}},
				{"memcpy", "/lib/libc", []uint64{200, 60, 0}}, // ties on cycles break on imiss
				{"main", "/bin/app", []uint64{200, 0, 0}},
				{"helper", "/bin/app", []uint64{40, 5, 0}},
				{symbolize.UnknownProcedure, "/bin/app", []uint64{10, 0, 9}},
				{symbolize.UnknownProcedure, unknown9, []uint64{1, 0, 0}},
			},
		},
		{
			name:   "events in the order given; the first sorts",
			q:      ProfQuery{Events: []uint8{evIMiss, evCycles}},
			cols:   []string{"imiss", "cycles"},
			totals: []uint64{95, 1151},
			rows: []wantRow{
				{"memcpy", "/lib/libc", []uint64{60, 200}},
				{"work", "/bin/app", []uint64{30, 400}},
				{"helper", "/bin/app", []uint64{5, 40}},
				{"idle", "/vmunix", []uint64{0, 300}},
				{"main", "/bin/app", []uint64{0, 200}},
				{symbolize.UnknownProcedure, "/bin/app", []uint64{0, 10}},
				{symbolize.UnknownProcedure, unknown9, []uint64{0, 1}},
			},
		},
		{
			name:   "by image",
			q:      ProfQuery{By: ByImage, Events: []uint8{evCycles}},
			cols:   []string{"cycles"},
			totals: []uint64{1151},
			rows: []wantRow{
				{"", "/bin/app", []uint64{650}},
				{"", "/vmunix", []uint64{300}},
				{"", "/lib/libc", []uint64{200}},
				{"", unknown9, []uint64{1}},
			},
		},
		{
			name:   "one epoch",
			q:      ProfQuery{Filter: storage.Query{Epochs: []uint64{2}}, Events: []uint8{evCycles}},
			cols:   []string{"cycles"},
			totals: []uint64{301},
			rows: []wantRow{
				{"idle", "/vmunix", []uint64{150}},
				{"work", "/bin/app", []uint64{100}},
				{"main", "/bin/app", []uint64{50}},
				{symbolize.UnknownProcedure, unknown9, []uint64{1}},
			},
		},
		{
			name:   "hosts: summed over the ones selected",
			q:      ProfQuery{Filter: storage.Query{Hosts: []string{"beta", "gamma"}}, Events: []uint8{evCycles}},
			cols:   []string{"cycles"},
			totals: []uint64{341},
			rows: []wantRow{
				{"idle", "/vmunix", []uint64{150}},
				{"work", "/bin/app", []uint64{100}},
				{"main", "/bin/app", []uint64{50}},
				{"helper", "/bin/app", []uint64{40}},
				{symbolize.UnknownProcedure, unknown9, []uint64{1}},
			},
		},
		{
			name:   "PID",
			q:      ProfQuery{Filter: storage.Query{PIDs: []uint32{7}}},
			cols:   []string{"cycles"},
			totals: []uint64{100},
			rows:   []wantRow{{"work", "/bin/app", []uint64{100}}},
		},
		{
			name:   "image by key",
			q:      ProfQuery{Filter: storage.Query{Images: []wire.ImageKey{testKey(2)}}},
			cols:   []string{"cycles", "imiss"},
			totals: []uint64{200, 60},
			rows:   []wantRow{{"memcpy", "/lib/libc", []uint64{200, 60}}},
		},
		{
			name:   "image by path and by file name; totals are of the selection",
			q:      ProfQuery{ImagePaths: []string{"/vmunix", "libc"}, Events: []uint8{evCycles}},
			cols:   []string{"cycles"},
			totals: []uint64{500},
			rows: []wantRow{
				{"idle", "/vmunix", []uint64{300}},
				{"memcpy", "/lib/libc", []uint64{200}},
			},
		},
		{
			name:   "a path matches nothing",
			q:      ProfQuery{ImagePaths: []string{"/bin/nope"}, Events: []uint8{evCycles}},
			cols:   []string{"cycles"},
			totals: []uint64{0},
		},
		{
			name: "an empty epoch list selects nothing",
			q:    ProfQuery{Filter: storage.Query{Epochs: []uint64{}}},
			cols: []string{},
		},
		{
			name:   "an event nobody sampled",
			q:      ProfQuery{Events: []uint8{evCycles, 11}},
			cols:   []string{"cycles", "wbfull"},
			totals: []uint64{1151, 0},
			rows: []wantRow{
				{"work", "/bin/app", []uint64{400, 0}},
				{"idle", "/vmunix", []uint64{300, 0}},
				{"main", "/bin/app", []uint64{200, 0}},
				{"memcpy", "/lib/libc", []uint64{200, 0}},
				{"helper", "/bin/app", []uint64{40, 0}},
				{symbolize.UnknownProcedure, "/bin/app", []uint64{10, 0}},
				{symbolize.UnknownProcedure, unknown9, []uint64{1, 0}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := Prof(t.Context(), fixture(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var cols []string
			var totals []uint64
			for _, c := range tb.Columns {
				cols = append(cols, c.Name)
				totals = append(totals, c.Total)
			}
			if !slices.Equal(cols, tc.cols) || !slices.Equal(totals, tc.totals) {
				t.Errorf("columns %v totals %v, want %v %v", cols, totals, tc.cols, tc.totals)
			}
			got := rowsOf(tb)
			if len(got) != len(tc.rows) {
				t.Fatalf("rows:\n%v\nwant\n%v", got, tc.rows)
			}
			for i := range got {
				if got[i].proc != tc.rows[i].proc || got[i].image != tc.rows[i].image || !slices.Equal(got[i].counts, tc.rows[i].counts) {
					t.Errorf("row %d: %v, want %v", i, got[i], tc.rows[i])
				}
			}
			checkPercentages(t, tb)
		})
	}
}

// checkPercentages recomputes % and cum% from the counts.
func checkPercentages(t *testing.T, tb *ProfTable) {
	t.Helper()
	cum := make([]uint64, len(tb.Columns))
	for i, r := range tb.Rows {
		if len(r.Counts) != len(tb.Columns) || len(r.Percent) != len(tb.Columns) || len(r.CumPercent) != len(tb.Columns) {
			t.Fatalf("row %d: %d counts, %d %%, %d cum%% for %d columns", i, len(r.Counts), len(r.Percent), len(r.CumPercent), len(tb.Columns))
		}
		for c, n := range r.Counts {
			cum[c] += n
			total := float64(tb.Columns[c].Total)
			if total == 0 {
				total = math.Inf(1)
			}
			if p := 100 * float64(n) / total; math.Abs(p-r.Percent[c]) > 1e-9 {
				t.Errorf("row %d col %d: %% %v, want %v", i, c, r.Percent[c], p)
			}
			if p := 100 * float64(cum[c]) / total; math.Abs(p-r.CumPercent[c]) > 1e-9 {
				t.Errorf("row %d col %d: cum%% %v, want %v", i, c, r.CumPercent[c], p)
			}
		}
		if i > 0 && slices.Compare(tb.Rows[i-1].Counts[:1], r.Counts[:1]) < 0 {
			t.Errorf("row %d sorts above row %d", i, i-1)
		}
	}
	for c := range tb.Columns {
		if tb.Omitted == 0 && cum[c] != tb.Columns[c].Total {
			t.Errorf("column %d: rows sum to %d, total %d", c, cum[c], tb.Columns[c].Total)
		}
		if tb.Omitted > 0 && cum[c]+tb.OmittedCounts[c] != tb.Columns[c].Total {
			t.Errorf("column %d: rows %d + omitted %d != total %d", c, cum[c], tb.OmittedCounts[c], tb.Columns[c].Total)
		}
	}
}

func TestProfLimit(t *testing.T) {
	all, err := Prof(t.Context(), fixture(), ProfQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, 1, 3, 7, 100} {
		tb, err := Prof(t.Context(), fixture(), ProfQuery{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		want := len(all.Rows)
		if limit > 0 {
			want = min(limit, len(all.Rows))
		}
		if len(tb.Rows) != want || tb.Omitted != len(all.Rows)-want {
			t.Errorf("limit %d: %d rows, %d omitted; want %d, %d", limit, len(tb.Rows), tb.Omitted, want, len(all.Rows)-want)
		}
		for i := range tb.Rows {
			if !slices.Equal(tb.Rows[i].CumPercent, all.Rows[i].CumPercent) {
				t.Errorf("limit %d row %d: cum%% %v, without limit %v", limit, i, tb.Rows[i].CumPercent, all.Rows[i].CumPercent)
			}
		}
		checkPercentages(t, tb)
	}
}

func TestProfBadQueries(t *testing.T) {
	for _, tc := range []struct {
		q    ProfQuery
		want string
	}{
		{ProfQuery{Limit: -1}, "negative"},
		{ProfQuery{By: 7}, "rows by"},
		{ProfQuery{Events: []uint8{}}, "no events"},
		{ProfQuery{Events: []uint8{0, 2, 0}}, "cycles listed twice"},
	} {
		_, err := Prof(t.Context(), fixture(), tc.q)
		if !errors.Is(err, analysis.ErrQuery) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Prof(%+v): %v, want analysis.ErrQuery with %q", tc.q, err, tc.want)
		}
	}
	// A Source that fails: the error comes back wrapped.
	_, err := Prof(t.Context(), stubSource{fixture(), testKey(2)}, ProfQuery{})
	if !errors.Is(err, storage.ErrCorrupt) {
		t.Errorf("Prof over a corrupt image record: %v", err)
	}
}

func TestProfGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		q    ProfQuery
		json bool
	}{
		{"prof_fleet.txt", ProfQuery{}, false},
		{"prof_imiss_top3.txt", ProfQuery{Events: []uint8{evIMiss, evCycles}, Limit: 3}, false},
		{"prof_by_image.txt", ProfQuery{By: ByImage}, false},
		{"prof_by_image_top2.txt", ProfQuery{By: ByImage, Limit: 2}, false},
		{"prof_empty.txt", ProfQuery{Filter: storage.Query{Epochs: []uint64{9}}}, false},
		{"prof_no_rows.txt", ProfQuery{Filter: storage.Query{Epochs: []uint64{9}}, Events: []uint8{evCycles}}, false},
		{"prof_top2.json", ProfQuery{Limit: 2}, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tb, err := Prof(t.Context(), fixture(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if tc.json {
				err = tb.WriteJSON(&buf)
			} else {
				err = tb.WriteText(&buf)
			}
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.file, buf.Bytes())
			if tc.json {
				var back ProfTable
				if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
					t.Fatalf("JSON does not read back: %v", err)
				}
				if back.By != tb.By || len(back.Rows) != len(tb.Rows) || back.Rows[0].ImageKey != tb.Rows[0].ImageKey || back.Omitted != tb.Omitted {
					t.Errorf("JSON read back as %+v", back)
				}
			}
		})
	}
}

func TestTextColumnsAlign(t *testing.T) {
	tb, err := Prof(t.Context(), fixture(), ProfQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tb.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.HasPrefix(lines[0], "Total samples for event type cycles = 1151, imiss = 95, dmiss = 9") {
		t.Errorf("first line %q", lines[0])
	}
	header := lines[4]
	procAt := strings.Index(header, "procedure")
	imageAt := strings.Index(header, "image")
	for _, l := range lines[5:] {
		// Every row's procedure and image start under their headings, and
		// its numbers end where the headings' do.
		if l[procAt-1] != ' ' || l[procAt] == ' ' || l[imageAt-1] != ' ' || l[imageAt] == ' ' {
			t.Errorf("misaligned row %q under %q", l, header)
		}
		if end := strings.Index(header, "cycles") + len("cycles"); l[end-1] == ' ' || l[end] != ' ' {
			t.Errorf("cycles not right-aligned in %q", l)
		}
	}
}

// TestTopRowsMatchesSort checks the bounded-heap selection against a full
// sort on random rows with many ties.
func TestTopRowsMatchesSort(t *testing.T) {
	r := testRand(t)
	for range 50 {
		n := r.IntN(60)
		rows := make([]ProfRow, n)
		for i := range rows {
			rows[i] = ProfRow{Procedure: string(rune('a' + r.IntN(3))), Image: string(rune('A' + i%7)),
				ImageKey: testKey(i), Counts: []uint64{uint64(r.IntN(4)), uint64(r.IntN(3))}}
		}
		above := func(a, b *ProfRow) int {
			if c := slices.Compare(b.Counts, a.Counts); c != 0 {
				return c
			}
			if c := strings.Compare(a.Image, b.Image); c != 0 {
				return c
			}
			if c := strings.Compare(a.Procedure, b.Procedure); c != 0 {
				return c
			}
			return a.ImageKey.Compare(b.ImageKey)
		}
		all := topRows(rows, n, above)
		for k := 0; k <= n; k++ {
			if got := topRows(rows, k, above); !slices.Equal(got, all[:k]) {
				t.Fatalf("n %d k %d: %v, want %v", n, k, got, all[:k])
			}
		}
		for i := 1; i < len(all); i++ {
			if above(&rows[all[i-1]], &rows[all[i]]) >= 0 {
				t.Fatalf("full order wrong at %d", i)
			}
		}
	}
}
