package tablesim

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"dcpi/config"
	"dcpi/simhost"
)

// TestRecordThenReplay records a trace of one short workload, saves it,
// and replays the saved file: both runs see the same samples and write
// the same table of designs.
func TestRecordThenReplay(t *testing.T) {
	sim := config.Defaults().Sim
	sim.CPUs = 1
	hc, err := simhost.MachineConfig(sim)
	if err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(t.TempDir(), "tiny.trace")
	var out1, out2, log bytes.Buffer
	o := Options{Workloads: []string{"sort"}, Machine: hc, Profile: "cycles", Rate: 8, Record: saved,
		SizesKB: []int{4, 16}, Out: &out1, Log: &log}
	if err := Run(o); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	recorded := regexp.MustCompile(`, (\d+) samples, `).FindStringSubmatch(out1.String())
	if recorded == nil || recorded[1] == "0" {
		t.Fatalf("no recording line with samples:\n%s", out1.String())
	}
	if err := Run(Options{TraceFile: saved, SizesKB: []int{4, 16}, Out: &out2, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out2.String(), ": "+recorded[1]+" samples on 1 CPUs") {
		t.Errorf("replay does not see the %s recorded samples:\n%s", recorded[1], out2.String())
	}
	table := func(s string) string { return s[strings.Index(s, "compulsory misses"):] }
	if table(out1.String()) != table(out2.String()) {
		t.Errorf("recorded and replayed runs differ:\n%s\n---\n%s", table(out1.String()), table(out2.String()))
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{TraceFile: "t", Mix: "default"}, "--trace replays a recorded trace"},
		{Options{Workloads: []string{"sort"}, Mix: "default"}, "not both"},
		{Options{Seconds: -1}, "--seconds -1"},
		{Options{SizesKB: []int{0}}, "--sizes: 0 KB"},
	} {
		if err := Run(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if _, err := Profile("nope", 1); err == nil {
		t.Error("an unknown profile was accepted")
	}
	if _, err := Profile("default", 0); err == nil {
		t.Error("rate 0 was accepted")
	}
}
