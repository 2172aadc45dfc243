package cct

import (
	"bytes"
	"strings"
	"testing"
)

const (
	M, A, C, D = 0x100, 0x200, 0x300, 0x400
)

// figure4 builds the paper's Figure 4/5 shape: M calls A and D, both call
// C; A calls itself recursively (folded into A's record).
func figure4(t *testing.T) *Tree {
	tr := New("calls", "cycles")
	m := tr.Child(tr.Root, M, 0)
	a := tr.Child(m, A, 0x104)
	d := tr.Child(m, D, 0x108)
	ca := tr.Child(a, C, 0x204)
	cd := tr.Child(d, C, 0x404)
	a2 := tr.Child(a, A, 0x208) // recursion: folds into a
	if a2 != a {
		t.Fatalf("recursive call made a new record")
	}
	if tr.Child(a, A, 0x208) != a || len(a.Recursive) != 1 {
		t.Fatalf("recursive call recorded %d backedges, want 1", len(a.Recursive))
	}
	for _, n := range []*Node{m, a, d, ca, cd} {
		n.Metrics[0]++
		n.Metrics[1] += 10
	}
	a.Metrics[0]++ // the recursive activation
	ca.AddPath(3, 2)
	return tr
}

func TestTreeAndStats(t *testing.T) {
	tr := figure4(t)
	s := tr.Stats(Layout{CallSites: func(p uint64) int {
		return map[uint64]int{M: 2, A: 3, C: 0, D: 1}[p]
	}})
	want := Stats{Nodes: 5, HeightMax: 3, HeightAvg: 3, MaxReplication: 2, MaxReplicated: C,
		CallSitesAll: 2 + 3 + 1, CallSitesUsed: 2 + 2 + 1}
	// Sizes: root 8+16+4 (one used site), M 8+16+8, A 8+16+12, D 8+16+4,
	// C 8+16 twice, plus one path count (16) in C under A.
	want.Size = 28 + 32 + 36 + 28 + 24 + 24 + 16
	want.AvgNodeSize = float64(want.Size) / 5
	want.AvgOutDegree = float64(2+2+1) / 3 // M, A (C and a backedge), D; the root is no procedure
	if s != want {
		t.Errorf("stats\n got %+v\nwant %+v", s, want)
	}
	if tot := tr.Totals(); tot[0] != 6 || tot[1] != 50 {
		t.Errorf("totals %v, want [6 50]", tot)
	}
	if by := tr.ByProc(); by[C][0] != 2 || by[A][0] != 2 {
		t.Errorf("by procedure %v", by)
	}
}

func TestMergeAndRender(t *testing.T) {
	a, b := figure4(t), figure4(t)
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if tot := a.Totals(); tot[0] != 12 || tot[1] != 100 {
		t.Errorf("merged totals %v, want [12 100]", tot)
	}
	if s := a.Stats(Layout{}); s.Nodes != 5 {
		t.Errorf("merging a tree into its copy made %d records, want 5", s.Nodes)
	}
	ma := a.Root.Lookup(Key{M, 0}).Lookup(Key{A, 0x104})
	if len(ma.Recursive) != 1 || ma.Recursive[0].To != ma {
		t.Errorf("merged backedges %v", ma.Recursive)
	}
	if ma.Lookup(Key{C, 0x204}).Paths[3] != 4 {
		t.Errorf("merged path counts %v", ma.Lookup(Key{C, 0x204}).Paths)
	}
	if err := a.Merge(New("calls")); err == nil {
		t.Error("merging different metrics: no error")
	}
	var out bytes.Buffer
	names := map[uint64]string{M: "main", A: "a", C: "c", D: "d"}
	if err := a.Render(&out, RenderOptions{Metric: 1, Top: 1, Name: func(p uint64) string { return names[p] }}); err != nil {
		t.Fatal(err)
	}
	want := `T calls=0 cycles=0 incl.cycles=100
  main calls=2 cycles=20 incl.cycles=100
    a @0x104 calls=4 cycles=20 incl.cycles=40
      -> a @0x208 (recursion)
      c @0x204 calls=2 cycles=20 incl.cycles=20 paths=1
    (1 more, incl.cycles=40)
`
	if out.String() != want {
		t.Errorf("render:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestEncodeDecode(t *testing.T) {
	tr := figure4(t)
	var a bytes.Buffer
	if err := tr.Encode(&a); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(a.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := back.Encode(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("round trip changed the encoding:\n%s\n%s", a.String(), b.String())
	}
	if back.Stats(Layout{}) != tr.Stats(Layout{}) {
		t.Error("round trip changed the stats")
	}
	good := a.String()
	bad := map[string]string{
		"version":     strings.Replace(good, `"version":1`, `"version":2`, 1),
		"unknown":     strings.Replace(good, `"version":1`, `"version":1,"x":1`, 1),
		"metrics len": strings.Replace(good, `"metrics":[0,0]`, `"metrics":[0]`, 1),
		"parent":      strings.Replace(good, `{"parent":0,`, `{"parent":7,`, 1),
		"trailing":    good + "{}",
		"empty":       `{"version":1,"metrics":[],"nodes":[]}`,
		"unfolded":    `{"version":1,"metrics":[],"nodes":[{"parent":-1,"proc":0,"metrics":[]},{"parent":0,"proc":1,"metrics":[]},{"parent":1,"proc":1,"metrics":[]}]}`,
		"dup key":     `{"version":1,"metrics":[],"nodes":[{"parent":-1,"proc":0,"metrics":[]},{"parent":0,"proc":1,"metrics":[]},{"parent":0,"proc":1,"metrics":[]}]}`,
		"backedge":    `{"version":1,"metrics":[],"nodes":[{"parent":-1,"proc":0,"metrics":[]},{"parent":0,"proc":1,"metrics":[]},{"parent":0,"proc":2,"metrics":[],"recursive":[{"site":4,"to":1}]}]}`,
		"root key":    `{"version":1,"metrics":[],"nodes":[{"parent":-1,"proc":5,"metrics":[]}]}`,
	}
	for name, in := range bad {
		if in == good {
			t.Fatalf("%s: the corruption did not apply", name)
		}
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	var b bytes.Buffer
	tr := New("calls")
	x := tr.Child(tr.Root, 1, 0)
	tr.Child(tr.Child(x, 2, 8), 1, 12)
	x.AddPath(1, 1)
	_ = tr.Encode(&b)
	f.Add(b.Bytes())
	f.Add([]byte(`{"version":1,"metrics":[],"nodes":[{"parent":-1,"proc":0,"metrics":[]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Decode(data)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := tr.Encode(&out); err != nil {
			t.Fatal(err)
		}
		again, err := Decode(out.Bytes())
		if err != nil {
			t.Fatalf("re-decoding an encoding: %v", err)
		}
		if again.Stats(Layout{}) != tr.Stats(Layout{}) {
			t.Fatal("stats changed in a round trip")
		}
	})
}
