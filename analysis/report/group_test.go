package report

import (
	"bytes"
	"testing"
)

// TestGroupTable: rows sorted by the first column, empty ones dropped,
// totals the rows' sums, and the text a dcpiprof table by value.
func TestGroupTable(t *testing.T) {
	cols := []ProfColumn{{Event: 0, Name: "cycles", Total: 999}, {Event: 2, Name: "imiss"}}
	g := NewGroupTable("service", cols, []GroupRow{
		{Value: "", Hosts: []string{"c"}, Counts: []uint64{10, 0}},
		{Value: "db", Hosts: []string{"a"}, Counts: []uint64{30, 4}},
		{Value: "idle", Hosts: []string{"d"}, Counts: []uint64{0, 0}},
		{Value: "web", Hosts: []string{"b", "e"}, Counts: []uint64{10, 1}},
	})
	var b bytes.Buffer
	if err := g.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	const want = `Total samples for event type cycles = 50, imiss = 5, by service

The counts given below are the number of samples for each listed event type.
==============================================================================
cycles       %     cum%  imiss       %     cum%  service       hosts
    30  60.00%   60.00%      4  80.00%   80.00%  db            a
    10  20.00%   80.00%      1  20.00%  100.00%  web           b,e
    10  20.00%  100.00%      0   0.00%  100.00%  (no service)  c
`
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	if cols[0].Total != 999 {
		t.Error("NewGroupTable changed its caller's columns")
	}
}

// TestGroupTableLimit: --limit with --by LABEL keeps the top values and
// prints the rest as one row, so the counts still sum to the totals and
// the kept rows' shares stay shares of the whole selection.
func TestGroupTableLimit(t *testing.T) {
	cols := []ProfColumn{{Event: 0, Name: "cycles"}}
	g := NewGroupTable("service", cols, []GroupRow{
		{Value: "db", Hosts: []string{"a"}, Counts: []uint64{50}},
		{Value: "web", Hosts: []string{"b"}, Counts: []uint64{30}},
		{Value: "cache", Hosts: []string{"c"}, Counts: []uint64{15}},
		{Value: "", Hosts: []string{"d"}, Counts: []uint64{5}},
	})
	g.Limit(0)
	if len(g.Rows) != 4 || g.Omitted != 0 {
		t.Fatalf("Limit(0) cut rows: %d rows, %d omitted", len(g.Rows), g.Omitted)
	}
	g.Limit(2)
	if len(g.Rows) != 2 || g.Omitted != 2 || g.OmittedCounts[0] != 20 {
		t.Fatalf("Limit(2): %d rows, %d omitted of %v", len(g.Rows), g.Omitted, g.OmittedCounts)
	}
	var b bytes.Buffer
	if err := g.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	const want = `Total samples for event type cycles = 100, by service

The counts given below are the number of samples for each listed event type.
==============================================================================
cycles       %     cum%  service          hosts
    50  50.00%   50.00%  db               a
    30  30.00%   80.00%  web              b
    20  20.00%  100.00%  [2 more values]
`
	if b.String() != want {
		t.Errorf("text:\n%q\nwant:\n%q", b.String(), want)
	}
}
