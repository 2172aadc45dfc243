package fleetpaths

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"dcpi/analysis/cct"
	"dcpi/analysis/paths"
	"dcpi/storage"
	"dcpi/wire"
)

const imageID = "buildid:0102030405060708090a0b0c0d0e0f1011121314"

const M, A, C, D = 0x100, 0x200, 0x300, 0x400

// tree is the CCT paper's Figure 4 shape, with a recursive call of A and
// path counts, scaled by k.
func tree(k uint64) *cct.Tree {
	t := cct.New("calls", "cycles")
	m := t.Child(t.Root, M, 0)
	a := t.Child(m, A, 0x104)
	d := t.Child(m, D, 0x108)
	ca := t.Child(a, C, 0x204)
	cd := t.Child(d, C, 0x404)
	t.Child(a, A, 0x208)
	for _, n := range []*cct.Node{m, a, d, ca, cd} {
		n.Metrics[0] += k
		n.Metrics[1] += 10 * k
	}
	ca.AddPath(3, 2*k)
	cd.AddPath(1, k)
	return t
}

func profile(src string, k uint64) *paths.Profile {
	return &paths.Profile{Source: src, Metrics: []string{"instructions"}, Images: []paths.ImageProfile{{ID: imageID, Path: "/bin/fig4",
		Procs: []paths.ProcProfile{
			{Entry: M, Name: "main", NumPaths: 2, Paths: []paths.PathCount{{ID: 1, Count: k, Metrics: []uint64{7 * k}}}},
			{Entry: C, Name: "c", NumPaths: 4, Unknown: k, Paths: []paths.PathCount{{ID: 1, Count: k, Metrics: []uint64{3 * k}}, {ID: 3, Count: 2 * k, Metrics: []uint64{8 * k}}}},
		}}}}
}

func encode(t *testing.T, p *paths.Profile) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.Encode(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func treeJSON(t *testing.T, tr *cct.Tree) []byte {
	t.Helper()
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRoundTrip: a profile and tree split, uploaded, encoded, decoded and
// read back are the same profile (under the fleet's source label) and the
// same tree.
func TestRoundTrip(t *testing.T) {
	ims, err := Split(wire.SourceOracle, profile(paths.OracleSource, 1), map[string]*cct.Tree{imageID: tree(1)})
	if err != nil || len(ims) != 1 {
		t.Fatalf("Split: %d images, %v", len(ims), err)
	}
	u, err := ims[0].Upload("alpha1", wire.UploadID{1})
	if err != nil {
		t.Fatal(err)
	}
	data, err := u.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got wire.PathUpload
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	p, tr, err := FromWire(got.Source, got.Image, &got.Profile)
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != paths.OracleSource {
		t.Errorf("oracle data read back as %q", p.Source)
	}
	if !bytes.Equal(encode(t, p), encode(t, profile(paths.OracleSource, 1))) {
		t.Errorf("profile differs:\n%s\n%s", encode(t, p), encode(t, profile(paths.OracleSource, 1)))
	}
	if !bytes.Equal(treeJSON(t, tr), treeJSON(t, tree(1))) {
		t.Errorf("tree differs:\n%s\n%s", treeJSON(t, tr), treeJSON(t, tree(1)))
	}
}

// TestMergeIsCCTMerge: storage's merge of two uploads is cct.Merge of their
// trees and the sum of their path counts.
func TestMergeIsCCTMerge(t *testing.T) {
	var profs []wire.PathProfile
	for _, k := range []uint64{1, 3} {
		ims, err := Split(wire.SourceInstrumented, profile("pixie", k), map[string]*cct.Tree{imageID: tree(k)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := ims[0].Profile()
		if err != nil {
			t.Fatal(err)
		}
		profs = append(profs, p)
	}
	merged, err := storage.MergePathProfiles(&profs[0], &profs[1])
	if err != nil {
		t.Fatal(err)
	}
	p, tr, err := FromWire(wire.SourceInstrumented, wire.MustParseImageKey(imageID), merged)
	if err != nil {
		t.Fatal(err)
	}
	want := tree(1)
	if err := want.Merge(tree(3)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(treeNodes(tr), treeNodes(want)) {
		t.Errorf("merged tree differs from cct.Merge")
	}
	wp := profile(ProfileSource(wire.SourceInstrumented), 4)
	if !bytes.Equal(encode(t, p), encode(t, wp)) {
		t.Errorf("merged paths differ:\n%s\n%s", encode(t, p), encode(t, wp))
	}
}

func TestSplitRefusesMislabelled(t *testing.T) {
	if _, err := Split(wire.SourceInstrumented, profile(paths.OracleSource, 1), nil); !errors.Is(err, ErrSource) {
		t.Errorf("oracle profile as instrumented: %v", err)
	}
	if _, err := Split(wire.SourceOracle, profile("pixie", 1), nil); !errors.Is(err, ErrSource) {
		t.Errorf("instrumented profile as oracle: %v", err)
	}
	p := profile("pixie", 1)
	p.Images[0].ID = "nokind"
	if _, err := Split(wire.SourceInstrumented, p, nil); err == nil {
		t.Error("bad image ID accepted")
	}
	// A tree of another image only: an image with a tree and no paths.
	ims, err := Split(wire.SourceInstrumented, profile("pixie", 1), map[string]*cct.Tree{"sha256:" + string(bytes.Repeat([]byte("ab"), 32)): tree(1)})
	if err != nil || len(ims) != 2 || ims[1].Tree == nil || ims[1].Procs != nil {
		t.Fatalf("tree-only image: %+v %v", ims, err)
	}
}
