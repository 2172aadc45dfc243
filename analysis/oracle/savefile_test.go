package oracle

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"dcpi/analysis/paths"
)

// TestSaveRoundTrip: a run's save file decodes to the same path counts and
// trees, and re-encoding what was read gives the same bytes.
func TestSaveRoundTrip(t *testing.T) {
	o, _, path := runOracle(t, "recurse", "1")
	var a bytes.Buffer
	if err := o.WriteSaved(&a); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSaved(a.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Trees) != 1 || s.Trees[0].Path != path || s.Paths.Source != paths.OracleSource {
		t.Fatalf("decoded %d trees, source %q", len(s.Trees), s.Paths.Source)
	}
	var total uint64
	for _, pr := range s.Paths.Images[0].Procs {
		want := o.Images[path].Procs[pr.Entry]
		for _, pc := range pr.Paths {
			if st := want.Paths[pc.ID]; st == nil || st.Count != pc.Count || st.Instructions != pc.Metrics[0] || st.Cycles != pc.Metrics[1] {
				t.Fatalf("%s path %d: decoded %+v, oracle %+v", pr.Name, pc.ID, pc, st)
			}
			total += pc.Count
		}
	}
	if total == 0 {
		t.Fatal("no paths saved")
	}
	var b bytes.Buffer
	if err := s.Paths.Encode(&b); err != nil {
		t.Fatal(err)
	}
	var pb bytes.Buffer
	if err := o.PathProfile().Encode(&pb); err != nil {
		t.Fatal(err)
	}
	if b.String() != pb.String() {
		t.Fatal("decoded profile re-encodes differently")
	}
	for name, in := range map[string]string{
		"format":   strings.Replace(a.String(), savedFormat, "other", 1),
		"trailing": a.String() + "{}",
		"paths":    strings.Replace(a.String(), `"source":"hwsim-oracle","metrics"`, `"source":"","metrics"`, 1),
	} {
		_, err := ReadSaved([]byte(in))
		if !errors.Is(err, ErrBadSave) && !errors.Is(err, paths.ErrBadProfile) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}
