package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"dcpi/analysis"
	"dcpi/storage"
	"dcpi/wire"
)

// stackFixture is fixture() with call stacks of cycles:
//
//	memcpy ← work ← main        120 (alpha, epoch 1)
//	memcpy ← helper ← main       60 (beta, epoch 2)
//	work ← main                 200 (alpha, epoch 1): main's last instruction calls work,
//	                                 so the return address is work's first
//	work, truncated              30 (beta, epoch 1)
//	[raw pc] ← main              10 (alpha, epoch 1)
func stackFixture() *analysis.MemSource {
	m := fixture()
	app, libc := testKey(1), testKey(2)
	f := func(img wire.ImageKey, off uint64) wire.Frame { return wire.Frame{Image: img, Offset: off} }
	m.AddStack(1, evCycles, "alpha", 0, false, []wire.Frame{f(libc, 0x220), f(app, 0x274), f(app, 0x238)}, 120)
	m.AddStack(2, evCycles, "beta", 0, false, []wire.Frame{f(libc, 0x224), f(app, 0x308), f(app, 0x240)}, 60)
	m.AddStack(1, evCycles, "alpha", 0, false, []wire.Frame{f(app, 0x264), f(app, 0x260)}, 200)
	m.AddStack(1, evCycles, "beta", 7, true, []wire.Frame{f(app, 0x268)}, 30)
	m.AddStack(1, evCycles, "alpha", 0, false, []wire.Frame{{Offset: 0x9000}, f(app, 0x244)}, 10)
	m.AddStack(1, evIMiss, "alpha", 0, false, []wire.Frame{f(app, 0x264), f(app, 0x238)}, 30)
	return m
}

func TestCallers(t *testing.T) {
	tab, err := Callers(t.Context(), stackFixture(), CallersQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Total != 420 {
		t.Fatalf("total %d, want 420", tab.Total)
	}
	rows := map[string]CalleeRow{}
	for _, r := range tab.Rows {
		rows[r.Proc.Procedure] = r
	}
	callers := func(r CalleeRow) map[string]uint64 {
		out := map[string]uint64{}
		for _, c := range r.Callers {
			out[c.Caller.Procedure] = c.Samples
		}
		return out
	}
	for _, tc := range []struct {
		proc          string
		self, incl    uint64
		callers       map[string]uint64
		topCallerPerc float64
	}{
		{"memcpy", 180, 180, map[string]uint64{"work": 120, "helper": 60}, 100 * 120.0 / 180},
		{"work", 230, 350, map[string]uint64{"main": 320, "[truncated]": 30}, 100 * 320.0 / 350},
		{"main", 0, 390, map[string]uint64{"[root]": 390}, 100},
		{"unknown_rtn", 10, 10, map[string]uint64{"main": 10}, 100},
	} {
		r, ok := rows[tc.proc]
		if !ok {
			t.Fatalf("no row for %s: %+v", tc.proc, tab.Rows)
		}
		if r.Self != tc.self || r.Inclusive != tc.incl || !equalCounts(callers(r), tc.callers) {
			t.Errorf("%s: self %d inclusive %d callers %v; want %d %d %v", tc.proc, r.Self, r.Inclusive, callers(r), tc.self, tc.incl, tc.callers)
		}
		if d := r.Callers[0].Percent - tc.topCallerPerc; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: top caller %.3f%%, want %.3f%%", tc.proc, r.Callers[0].Percent, tc.topCallerPerc)
		}
	}
	if tab.Rows[0].Proc.Procedure != "main" {
		t.Errorf("first row %s, want main (most inclusive)", tab.Rows[0].Proc)
	}
	var buf bytes.Buffer
	if err := tab.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "<- work (app)") {
		t.Errorf("rendered:\n%s (%v)", buf.String(), err)
	}
	// A source without stacks says so.
	if _, err := Callers(t.Context(), fixture(), CallersQuery{}); err == nil {
		// fixture() is a MemSource, which holds stacks (none): fine.
		if _, err := Callers(t.Context(), flatOnly{fixture()}, CallersQuery{}); !errors.Is(err, analysis.ErrNoStacks) {
			t.Errorf("source without stacks: %v", err)
		}
	}
}

// flatOnly hides a source's stacks.
type flatOnly struct{ analysis.Source }

func equalCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestTree(t *testing.T) {
	src := stackFixture()
	flatten := func(n *TreeNode) map[string][2]uint64 {
		out := map[string][2]uint64{}
		var walk func(n *TreeNode, path string)
		walk = func(n *TreeNode, path string) {
			for _, c := range n.Children {
				p := path + "/" + c.Proc.Procedure
				out[p] = [2]uint64{c.Total, c.Self}
				walk(c, p)
			}
		}
		walk(n, "")
		return out
	}
	downTree, err := Tree(t.Context(), src, TreeQuery{TopDown: true})
	if err != nil {
		t.Fatal(err)
	}
	down := downTree.Root
	wantDown := map[string][2]uint64{
		"/main": {390, 0}, "/main/work": {320, 200}, "/main/work/memcpy": {120, 120}, "/main/helper": {60, 0},
		"/main/helper/memcpy": {60, 60}, "/main/unknown_rtn": {10, 10}, "/[truncated]": {30, 0}, "/[truncated]/work": {30, 30},
	}
	if got := flatten(down); !equalTree(got, wantDown) || down.Total != 420 {
		t.Fatalf("top-down %v (total %d)\nwant %v", got, down.Total, wantDown)
	}
	if down.Children[0].Proc.Procedure != "main" {
		t.Errorf("top-down children not by total: %s first", down.Children[0].Proc)
	}
	upTree, err := Tree(t.Context(), src, TreeQuery{StackQuery: StackQuery{Filter: storage.Query{Hosts: []string{"beta"}}}})
	if err != nil {
		t.Fatal(err)
	}
	wantUp := map[string][2]uint64{
		"/memcpy": {60, 0}, "/memcpy/helper": {60, 0}, "/memcpy/helper/main": {60, 60}, "/work": {30, 0}, "/work/[truncated]": {30, 30},
	}
	if got := flatten(upTree.Root); !equalTree(got, wantUp) {
		t.Fatalf("bottom-up %v\nwant %v", got, wantUp)
	}
	var buf bytes.Buffer
	if err := downTree.WriteText(&buf, 5, 0); err != nil || !strings.Contains(buf.String(), "    memcpy (libc)") || !strings.Contains(buf.String(), "(1 more)") {
		t.Errorf("rendered:\n%s (%v)", buf.String(), err)
	}
}

func equalTree(a, b map[string][2]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
