package profiledb

import (
	"bytes"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/simhost"
	"dcpi/storage"
)

// TestChoosePeriods: the selected hosts' registered periods; a
// disagreement is a conflict unless --period settles it; a host without
// periods counts as the default configuration, and is named.
func TestChoosePeriods(t *testing.T) {
	cyc, imiss, dmiss := uint8(alpha.EvCycles), uint8(alpha.EvIMiss), uint8(alpha.EvDMiss)
	mux := storage.Node{Host: "m", CPUs: 1, Periods: simhost.EventsPerSample(hwsim.MuxProfile())}
	def := storage.Node{Host: "d", CPUs: 1, Periods: simhost.EventsPerSample(hwsim.DefaultProfile())}
	old := storage.Node{Host: "old", CPUs: 1}
	nodes := []storage.Node{mux, def, old}

	pc, err := ChoosePeriods(nodes, []string{"m"}, nil)
	if err != nil || pc.Periods[cyc] != 63488 || pc.Periods[imiss] != 16384 || pc.Periods[dmiss] != 16384 || len(pc.Conflicts) != 0 || pc.Legacy != nil {
		t.Fatalf("mux host alone: %+v %v", pc, err)
	}
	// The default host counts cycles and imiss only: dmiss is the mux
	// host's alone, imiss a disagreement.
	pc, err = ChoosePeriods(nodes, []string{"d", "m"}, nil)
	if err != nil || pc.Periods[cyc] != 63488 || pc.Periods[dmiss] != 16384 || len(pc.Conflicts) != 1 ||
		pc.Conflicts[imiss] != "16384 on m; 4096 on d" {
		t.Fatalf("mux and default hosts: %+v %v", pc, err)
	}
	if _, ok := pc.Periods[imiss]; ok {
		t.Errorf("imiss has a period despite the conflict: %v", pc.Periods)
	}
	pc, err = ChoosePeriods(nodes, []string{"d", "m"}, []string{"imiss=8192"})
	if err != nil || pc.Periods[imiss] != 8192 || len(pc.Conflicts) != 0 {
		t.Fatalf("--period settles it: %+v %v", pc, err)
	}
	// A host of an earlier build (or not registered at all) gets the
	// defaults: it agrees with the default host.
	pc, err = ChoosePeriods(nodes, []string{"d", "old", "unregistered"}, nil)
	if err != nil || pc.Periods[imiss] != 4096 || pc.Periods[dmiss] != 4096 || len(pc.Conflicts) != 0 ||
		strings.Join(pc.Legacy, ",") != "old,unregistered" {
		t.Fatalf("legacy hosts: %+v %v", pc, err)
	}
	if _, err := ChoosePeriods(nodes, []string{"m"}, []string{"imiss"}); err == nil {
		t.Error("--period imiss accepted")
	}

	// Check refuses a profile holding the conflicting event, whether as
	// samples or not; one without it passes.
	pc, _ = ChoosePeriods(nodes, []string{"d", "m"}, nil)
	withImiss := []string{"cycles", "cycles_samples", "imiss"}
	err = pc.Check(withImiss, 1, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "different periods (events per sample: 16384 on m; 4096 on d)") || !strings.Contains(err.Error(), "--period imiss=N") {
		t.Errorf("conflict: %v", err)
	}
	if err := pc.Check(withImiss[:2], 1, &bytes.Buffer{}); err != nil {
		t.Errorf("no imiss in the profile: %v", err)
	}
	pc, _ = ChoosePeriods(nodes, []string{"old"}, nil)
	var note bytes.Buffer
	if err := pc.Check(withImiss[:2], 1, &note); err != nil ||
		note.String() != "note: no recorded sampling periods for old (registered by an earlier dcpi): using the default configuration's (cycles 63488, other events 4096; --period sets them)\n" {
		t.Errorf("legacy note %q, %v", note.String(), err)
	}
}
