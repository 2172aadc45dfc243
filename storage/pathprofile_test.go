package storage

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// pathModel is merged path profiles as flat maps: what the tests compare
// the database's merges against.
type pathModel struct {
	paths map[string][]uint64  // "entry/id" → count, metrics...
	procs map[uint64][2]uint64 // entry → num paths, unknown
	tree  map[string][]uint64  // chain of keys → metrics..., then path tallies as id,count pairs
	backs map[string]bool      // chain, site, target chain
}

func newPathModel() *pathModel {
	return &pathModel{paths: map[string][]uint64{}, procs: map[uint64][2]uint64{}, tree: map[string][]uint64{}, backs: map[string]bool{}}
}

func addU64s(dst, src []uint64) []uint64 {
	if dst == nil {
		dst = make([]uint64, len(src))
	}
	for i, v := range src {
		dst[i] += v
	}
	return dst
}

// add merges p into m the slow way.
func (m *pathModel) add(p *wire.PathProfile) {
	for _, pr := range p.Procs {
		old := m.procs[pr.Entry]
		m.procs[pr.Entry] = [2]uint64{pr.NumPaths, old[1] + pr.Unknown}
		for _, r := range pr.Paths {
			k := fmt.Sprintf("%x/%d", pr.Entry, r.ID)
			m.paths[k] = addU64s(m.paths[k], append([]uint64{r.Count}, r.Metrics...))
		}
	}
	chains := make([]string, len(p.Tree))
	for i, n := range p.Tree {
		if i > 0 {
			chains[i] = chains[n.Parent] + fmt.Sprintf("/%x@%x", n.Proc, n.CallSite)
		}
		m.tree[chains[i]] = addU64s(m.tree[chains[i]], n.Metrics)
		for _, pt := range n.Paths {
			k := chains[i] + fmt.Sprintf("#%d", pt.ID)
			m.tree[k] = addU64s(m.tree[k], []uint64{pt.Count})
		}
		for _, b := range n.Recursive {
			m.backs[fmt.Sprintf("%s %x %s", chains[i], b.CallSite, chains[b.To])] = true
		}
	}
}

func modelOf(p *wire.PathProfile) *pathModel {
	m := newPathModel()
	m.add(p)
	return m
}

// TestPathProfileModel applies random uploads of three hosts, two images
// and both sources, with redeliveries and uploads whose metric names do not
// match, and compares every merge (fleet and per host subsets) with the
// model.
func TestPathProfileModel(t *testing.T) {
	r := testRand(t)
	db, dir := openTest(t)
	type mk struct {
		src   wire.PathSource
		image wire.ImageKey
		host  string
	}
	models := map[mk]*pathModel{}
	var sent []*wire.PathUpload
	hosts := []string{"a", "b", "c"}
	refused := 0
	for i := range 60 {
		var u *wire.PathUpload
		if len(sent) > 0 && r.IntN(4) == 0 {
			u = sent[r.IntN(len(sent))] // a redelivery
		} else {
			u = wiretest.RandPathUpload(r, hosts[r.IntN(3)], key(r.IntN(2)), wire.PathSource(1+r.IntN(2)), wiretest.PathOptions{Procs: 4, Paths: 6, Tree: 1 + r.IntN(10)})
			if r.IntN(6) == 0 && models[mk{u.Source, u.Image, ""}] != nil {
				u.Profile.PathMetrics = []string{"a", "b", "c", "d"} // refused
			}
			sent = append(sent, u)
		}
		before, _ := db.PathUploads()
		out, err := db.ApplyPathUpload(u)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		seen := slices.ContainsFunc(before, func(rec PathUploadRecord) bool { return rec.Host == u.Host && rec.ID == u.ID })
		switch {
		case seen:
			if out.Status != PathDuplicate {
				t.Fatalf("%d: redelivery: %v", i, out.Status)
			}
			continue
		case u.Profile.PathMetrics[0] == "a" && models[mk{u.Source, u.Image, ""}] != nil:
			if out.Status != PathRefused || !strings.Contains(out.Reason, "path metrics") {
				t.Fatalf("%d: mismatched metrics: %v %q", i, out.Status, out.Reason)
			}
			refused++
			again, _ := db.ApplyPathUpload(u)
			if again.Status != PathDuplicate || again.Reason != out.Reason {
				t.Fatalf("%d: refused upload redelivered: %+v", i, again)
			}
			continue
		}
		if out.Status != PathApplied {
			t.Fatalf("%d: %+v", i, out)
		}
		for _, h := range []string{"", u.Host} {
			k := mk{u.Source, u.Image, h}
			if models[k] == nil {
				models[k] = newPathModel()
			}
			models[k].add(&u.Profile)
		}
	}
	t.Logf("%d uploads, %d refused", len(sent), refused)
	check := func(db *DB) {
		for k, want := range models {
			var hs []string
			if k.host != "" {
				hs = []string{k.host}
			}
			got, err := db.PathProfile(k.src, k.image, hs)
			if err != nil {
				t.Fatalf("%v: %v", k, err)
			}
			if g := modelOf(got); !reflect.DeepEqual(g, want) {
				t.Fatalf("%v: merged profile differs from the model:\n got %v\nwant %v", k, g, want)
			}
		}
		// Two hosts together are the sum of each.
		for _, src := range []wire.PathSource{wire.SourceInstrumented, wire.SourceOracle} {
			want := newPathModel()
			n := 0
			for _, h := range []string{"a", "c"} {
				if p, err := db.PathProfile(src, key(0), []string{h}); err == nil {
					want.add(p)
					n++
				}
			}
			got, err := db.PathProfile(src, key(0), []string{"c", "a", "c"})
			if n == 0 {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("%v: no uploads, got %v", src, err)
				}
				continue
			}
			if err != nil || !reflect.DeepEqual(modelOf(got), want) {
				t.Fatalf("%v: hosts a and c: %v", src, err)
			}
		}
	}
	check(db)
	ims, err := db.PathImages(0)
	if err != nil {
		t.Fatal(err)
	}
	fleet := 0
	for k := range models {
		if k.host == "" {
			fleet++
		}
	}
	if len(ims) != fleet {
		t.Fatalf("PathImages: %d, want %d", len(ims), fleet)
	}
	for _, im := range ims {
		for _, h := range im.Hosts {
			if models[mk{im.Source, im.Image, h}] == nil {
				t.Fatalf("PathImages lists host %s for %v %v, which uploaded none", h, im.Source, im.Image)
			}
		}
	}
	// Everything survives a reopen.
	db.Close()
	db2, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	check(db2)
}

// TestMergePathProfilesRefuses: another numbering of a procedure, other
// tree metrics; a profile without a tree takes the other's.
func TestMergePathProfilesRefuses(t *testing.T) {
	a := &wire.PathProfile{PathMetrics: []string{"cycles"}, Procs: []wire.PathProc{{Entry: 0x10, NumPaths: 4, Paths: []wire.PathRun{{ID: 1, Count: 2, Metrics: []uint64{9}}}}},
		TreeMetrics: []string{"calls"}, Tree: []wire.TreeNode{{Metrics: []uint64{0}}, {Proc: 0x10, Metrics: []uint64{1}}}}
	b := &wire.PathProfile{PathMetrics: []string{"cycles"}, Procs: []wire.PathProc{{Entry: 0x10, NumPaths: 5}}}
	if _, err := MergePathProfiles(a, b); err == nil || !strings.Contains(err.Error(), "numbered with 5 paths, stored 4") {
		t.Fatalf("numbering: %v", err)
	}
	b.Procs[0].NumPaths = 4
	b.TreeMetrics, b.Tree = []string{"cycles"}, []wire.TreeNode{{Metrics: []uint64{0}}}
	if _, err := MergePathProfiles(a, b); err == nil || !strings.Contains(err.Error(), "tree metrics") {
		t.Fatalf("tree metrics: %v", err)
	}
	b.TreeMetrics, b.Tree = nil, nil
	m, err := MergePathProfiles(b, a)
	if err != nil || len(m.Tree) != 2 || m.Procs[0].Paths[0].Count != 2 || slices.Collect(maps.Keys(modelOf(m).tree)) == nil {
		t.Fatalf("merge with no tree: %+v %v", m, err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
}
