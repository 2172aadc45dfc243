package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"dcpi/internal/golden"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// goldenPathUpload is written out by hand so its bytes change only with
// the format: two procedures, a tree with a recursive call.
func goldenPathUpload() *wire.PathUpload {
	return &wire.PathUpload{
		Host: "alpha7-lab", ID: wire.UploadID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		Image: wire.MustParseImageKey("buildid:0102030405060708090a0b0c0d0e0f1011121314"), Source: wire.SourceInstrumented,
		Profile: wire.PathProfile{
			ImagePath: "/bin/sort", PathMetrics: []string{"instructions", "cycles"},
			Procs: []wire.PathProc{
				{Entry: 0x120000040, Name: "main", NumPaths: 4, Paths: []wire.PathRun{{ID: 0, Count: 1, Metrics: []uint64{12, 30}}, {ID: 3, Count: 2, Metrics: []uint64{40, 91}}}},
				{Entry: 0x120000100, Name: "qsort", NumPaths: 0, Unknown: 3},
			},
			TreeMetrics: []string{"calls", "cycles"},
			Tree: []wire.TreeNode{
				{Metrics: []uint64{0, 0}},
				{Parent: 0, Proc: 0x120000040, Metrics: []uint64{1, 121}, Paths: []wire.PathTally{{ID: 0, Count: 1}, {ID: 3, Count: 2}}},
				{Parent: 1, Proc: 0x120000100, CallSite: 0x120000060, Metrics: []uint64{5, 800},
					Recursive: []wire.TreeBackedge{{CallSite: 0x120000120, To: 2}}},
			},
		},
	}
}

func TestPathUploadGolden(t *testing.T) {
	u := goldenPathUpload()
	p := u.Profile
	golden.Check(t, filepath.Join("testdata", "pathupload.golden"), []golden.Value{
		{Name: "path-upload-v1", Value: u, Encode: u.MarshalBinary,
			Decode: func(b []byte) (any, error) { var d wire.PathUpload; return &d, d.UnmarshalBinary(b) }},
		{Name: "path-profile-v1", Value: &p, Encode: p.MarshalBinary,
			Decode: func(b []byte) (any, error) { var d wire.PathProfile; return &d, d.UnmarshalBinary(b) }},
	})
}

func TestPathUploadRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 200 {
		o := wiretest.PathOptions{Procs: 1 + r.IntN(10), Paths: 1 + r.IntN(20), Tree: r.IntN(40) - 1}
		u := wiretest.RandPathUpload(r, fmt.Sprintf("h%d", i%3), wiretest.Key(i%5), wire.PathSource(1+i%2), o)
		data, err := u.MarshalBinary()
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		var got wire.PathUpload
		if err := got.UnmarshalBinary(data); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if !equalUpload(&got, u) {
			t.Fatalf("%d: round trip differs:\n got %+v\nwant %+v", i, got, *u)
		}
		again, _ := got.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Fatalf("%d: re-encoding differs", i)
		}
	}
}

// equalUpload compares without telling nil lists from empty ones.
func equalUpload(a, b *wire.PathUpload) bool {
	x, _ := a.MarshalBinary()
	y, _ := b.MarshalBinary()
	return x != nil && bytes.Equal(x, y) && a.Host == b.Host && a.ID == b.ID && len(a.Profile.Tree) == len(b.Profile.Tree) &&
		reflect.DeepEqual(a.Profile.PathMetrics, b.Profile.PathMetrics)
}

// TestPathUploadRefuses breaks one rule at a time: Marshal refuses, and
// the decoder refuses the same message with the checksum recomputed.
func TestPathUploadRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(u *wire.PathUpload)
		want error
	}{
		{"zero id", func(u *wire.PathUpload) { u.ID = wire.UploadID{} }, wire.ErrInvalid},
		{"no source", func(u *wire.PathUpload) { u.Source = 0 }, wire.ErrInvalid},
		{"bad host", func(u *wire.PathUpload) { u.Host = "a.b" }, wire.ErrInvalid},
		{"procs out of order", func(u *wire.PathUpload) { u.Profile.Procs[0].Entry = 0x120000100 }, wire.ErrInvalid},
		{"path out of range", func(u *wire.PathUpload) { u.Profile.Procs[0].Paths[1].ID = 4 }, wire.ErrInvalid},
		{"zero count", func(u *wire.PathUpload) { u.Profile.Procs[0].Paths[1].Count = 0 }, wire.ErrInvalid},
		{"paths unnumbered", func(u *wire.PathUpload) {
			u.Profile.Procs[1].Paths = []wire.PathRun{{ID: 0, Count: 1, Metrics: []uint64{1, 1}}}
		}, wire.ErrInvalid},
		{"metric repeated", func(u *wire.PathUpload) { u.Profile.PathMetrics[1] = "instructions" }, wire.ErrInvalid},
		{"recursion unfolded", func(u *wire.PathUpload) { u.Profile.Tree[2].Proc = 0x120000040 }, wire.ErrInvalid},
		{"backedge to root", func(u *wire.PathUpload) { u.Profile.Tree[2].Recursive[0].To = 0 }, wire.ErrInvalid},
		{"root with key", func(u *wire.PathUpload) { u.Profile.Tree[0].Proc = 1 }, wire.ErrInvalid},
		{"tree metrics without tree", func(u *wire.PathUpload) { u.Profile.Tree = nil }, wire.ErrInvalid},
		{"siblings out of order", func(u *wire.PathUpload) {
			u.Profile.Tree = append(u.Profile.Tree, wire.TreeNode{Parent: 0, Proc: 0x1, Metrics: []uint64{0, 0}})
		}, wire.ErrInvalid},
		{"not preorder", func(u *wire.PathUpload) {
			u.Profile.Tree = append(u.Profile.Tree, wire.TreeNode{Parent: 1, Proc: 0x120000200, CallSite: 0x120000050, Metrics: []uint64{0, 0}})
		}, wire.ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := goldenPathUpload()
			c.edit(u)
			if _, err := u.MarshalBinary(); !errors.Is(err, c.want) {
				t.Fatalf("Marshal: %v, want %v", err, c.want)
			}
		})
	}
	// Truncations, resealed so the parser sees them, and a future version.
	var d wire.PathUpload
	data, _ := goldenPathUpload().MarshalBinary()
	for _, cut := range []int{0, 5, 12, len(data) / 2, len(data) - 1} {
		m := data[:cut]
		if cut >= wire.HeaderLen+wire.TrailerLen {
			m = wire.Reseal(m)
		}
		if err := d.UnmarshalBinary(m); err == nil {
			t.Errorf("decoded a message cut at %d", cut)
		}
	}
	bad := bytes.Clone(data)
	bad[4], bad[5] = 0, 9
	if err := d.UnmarshalBinary(wire.Reseal(bad)); !errors.Is(err, wire.ErrVersion) {
		t.Errorf("version 9: %v", err)
	}
}

func TestUploadIDAndSource(t *testing.T) {
	id := wire.UploadID{0xab, 1}
	got, err := wire.ParseUploadID(id.String())
	if err != nil || got != id {
		t.Fatalf("ParseUploadID(%s) = %v, %v", id, got, err)
	}
	for _, s := range []string{"", "00000000000000000000000000000000", "xyz", id.String() + "00"} {
		if _, err := wire.ParseUploadID(s); err == nil {
			t.Errorf("ParseUploadID(%q) accepted", s)
		}
	}
	for _, s := range []wire.PathSource{wire.SourceInstrumented, wire.SourceOracle} {
		if p, err := wire.ParsePathSource(s.String()); err != nil || p != s {
			t.Errorf("ParsePathSource(%s) = %v, %v", s, p, err)
		}
	}
	if _, err := wire.ParsePathSource("hwsim"); err == nil {
		t.Error("ParsePathSource accepted hwsim")
	}
}

func pathSeeds() [][]byte {
	r := rand.New(rand.NewPCG(21, 22))
	var out [][]byte
	for i, u := range []*wire.PathUpload{goldenPathUpload(),
		wiretest.RandPathUpload(r, "h", wiretest.Key(1), wire.SourceOracle, wiretest.PathOptions{Tree: -1}),
		wiretest.RandPathUpload(r, "h", wiretest.Key(2), wire.SourceInstrumented, wiretest.PathOptions{Procs: 3, Paths: 4, Tree: 20}),
		wiretest.RandPathUpload(r, "h", wiretest.Key(3), wire.SourceInstrumented, wiretest.PathOptions{Procs: 10, Paths: 30, Tree: 60}),
	} {
		data, err := u.MarshalBinary()
		if err != nil {
			panic(fmt.Sprint(i, err))
		}
		out = append(out, data, data[:len(data)/2], wire.Reseal(data[:len(data)-1]))
	}
	return out
}

func FuzzPathUpload(f *testing.F) {
	for _, s := range pathSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPathUpload(t, data)
		if len(data) >= wire.HeaderLen+wire.TrailerLen {
			checkPathUpload(t, wire.Reseal(data))
		}
	})
}

func checkPathUpload(t *testing.T, data []byte) {
	var u wire.PathUpload
	if err := u.UnmarshalBinary(data); err != nil {
		if u.Host != "" || u.Profile.Tree != nil {
			t.Fatalf("upload not zeroed after error %v", err)
		}
		return
	}
	again, err := u.MarshalBinary()
	if err != nil {
		t.Fatalf("decoded upload does not encode: %v", err)
	}
	if !bytes.Equal(again, data) {
		t.Fatalf("re-encoding differs:\n in %x\nout %x", data, again)
	}
}

// TestPathSeedCorpus keeps testdata/fuzz/FuzzPathUpload (-update-corpus
// rewrites it).
func TestPathSeedCorpus(t *testing.T) {
	seeds := pathSeeds()
	dir := filepath.Join("testdata", "fuzz", "FuzzPathUpload")
	if *updateCorpus {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) < len(seeds) {
		t.Errorf("%s: %d seed files (%v); run with -update-corpus", dir, len(ents), err)
	}
}
