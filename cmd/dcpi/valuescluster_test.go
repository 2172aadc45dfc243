package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	valuesa "dcpi/analysis/values"
	"dcpi/analysis/values/valuetest"
	"dcpi/conservation"
	"dcpi/coordinator"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/internal/hotlist"
	"dcpi/internal/racedetect"
	"dcpi/node/valuemod"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
)

// TestValuesThroughTheCluster is value sampling's fleet check: three hosts
// running ptrchase and hashdb with --values loadlat publish their hot
// lists through the real cluster (embedded NATS, two aggregators, a
// 3-replica Raft coordinator), and from what the cluster stored
//
//   - every host's and the fleet's interrupts are conserved exactly:
//     stored interrupts = interpreted + without user context + gave up
//     (by reason), equal to the interrupts the host's simulated hardware
//     delivered (and the same check fails for one interrupt more);
//   - the fleet-wide load-latency lists' level shares match hwsim's
//     ground truth, summed over the hosts, within their stated error
//     (valuetest.CompareLevels, simhost's check).
func TestValuesThroughTheCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three timed hosts with ground truth")
	}
	if racedetect.Enabled {
		t.Skip("three timed hosts with ground truth take minutes under the race detector; the cluster path's concurrency is raced in its packages' tests")
	}
	progs, err := simhost.EmbeddedPrograms([]string{"ptrchase", "hashdb"})
	if err != nil {
		t.Fatal(err)
	}
	o := demoOptions{hosts: 3, cpus: 2, replicas: 3, aggregators: 2, seconds: 0.25, cutAt: 0.5, timing: true,
		limit: 3, programs: progs, values: "loadlat", dir: filepath.Join(t.TempDir(), "fleet")}
	o.tune = func(hc *hwsim.Config, nc *simhost.Config) {
		hc.GroundTruth = true
		// Ten times DCPI's default CYCLES rate, so that loads gather
		// enough samples in a short run (as simhost's check does).
		nc.Profile.Counters[0].PeriodMin, nc.Profile.Counters[0].PeriodMax = 6000, 7000
	}
	var checked, followers int
	var report string
	o.inspect = func(ctx context.Context, natsURL string, coord *coordinator.Client, hosts []*clusterHost) error {
		checkClusterValueConservation(t, ctx, coord, hosts)
		checked, followers = checkClusterLevels(t, ctx, coord, hosts)
		// dcpi values reads the same lists from the cluster, with the
		// shared filters.
		out, _, err := run(t, "values", "--nats", natsURL, "--linearizable", "--view", "latency", "--limit", "5", "--json")
		if err != nil {
			t.Errorf("dcpi values --nats: %v\n%s", err, out)
		}
		var rep valuesa.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Rows) == 0 || rep.Stats.Interrupts == 0 {
			t.Errorf("dcpi values --nats --json: %v: %d rows, %+v", err, len(rep.Rows), rep.Stats)
		}
		report, _, err = run(t, "values", "--nats", natsURL, "--linearizable", "--label", "rack=r1", "--limit", "3")
		if err != nil {
			t.Errorf("dcpi values --nats --label rack=r1: %v\n%s", err, report)
		}
		return nil
	}
	var out bytes.Buffer
	if err := runDemo(context.Background(), &out, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, h := range []string{"alpha0", "alpha1", "alpha2", "fleet"} {
		if !regexp.MustCompile(`(?m)^  ` + h + `\s+\d+ interrupts = \d+ interpreted \+ \d+ without user context.*: balanced$`).MatchString(out.String()) {
			t.Errorf("no balanced value conservation line for %s:\n%s", h, out.String())
		}
	}
	if checked < 10 {
		t.Fatalf("only %d loads sampled often enough to check (%d same-line followers left out)", checked, followers)
	}
	t.Logf("%d loads checked against ground truth, %d same-line followers left out", checked, followers)
	// rack=r1 is alpha1 alone: its report accounts for its interrupts.
	if m := regexp.MustCompile(`(?m)^  alpha1\s+(\d+) interrupts`).FindStringSubmatch(out.String()); m == nil ||
		!strings.Contains(report, "value sampling (loadlat): "+m[1]+" interrupts") {
		t.Errorf("dcpi values --label rack=r1 does not report alpha1's interrupts:\n%s", report)
	}
}

// checkClusterValueConservation holds each host's stored accounting, and
// the fleet's, to the interrupts its hardware delivered, exactly.
func checkClusterValueConservation(t *testing.T, ctx context.Context, coord *coordinator.Client, hosts []*clusterHost) {
	t.Helper()
	var fleet wire.ValueStats
	var delivered uint64
	for _, h := range hosts {
		_, s, err := coord.ValueTotals(ctx, storage.Query{Hosts: []string{h.name}}, true)
		if err != nil {
			t.Fatal(err)
		}
		n := h.interrupts()
		if _, ok := conservation.HostValuesLine(s, n); !ok || s.Interrupts == 0 {
			t.Errorf("host %s: stored %+v, hardware delivered %d interrupts", h.name, s, n)
		}
		// The check can fail: one interrupt more, delivered or stored
		// in any outcome, does not balance.
		if _, ok := conservation.HostValuesLine(s, n+1); ok {
			t.Errorf("host %s: %d stored interrupts balance %d delivered", h.name, s.Interrupts, n+1)
		}
		more := s
		more.Completed++
		if _, ok := conservation.HostValuesLine(more, n); ok {
			t.Errorf("host %s: one interpreted interrupt more still balances", h.name)
		}
		fleet.Add(s)
		delivered += n
	}
	_, all, err := coord.ValueTotals(ctx, storage.Query{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if all.Interrupts != fleet.Interrupts || all.Completed != fleet.Completed || all.NoContext != fleet.NoContext {
		t.Errorf("fleet totals %+v are not the hosts' sum %+v", all, fleet)
	}
	if _, ok := conservation.HostValuesLine(all, delivered); !ok {
		t.Errorf("fleet: stored %+v, hardware delivered %d interrupts", all, delivered)
	}
}

// checkClusterLevels compares the fleet-wide latency lists the cluster
// stored with the hosts' ground truth, summed.
func checkClusterLevels(t *testing.T, ctx context.Context, coord *coordinator.Client, hosts []*clusterHost) (checked, followers int) {
	t.Helper()
	type key struct {
		path string
		pc   uint64
	}
	truth := map[key]*alpha.PCTruth{}
	for _, h := range hosts {
		for path, g := range h.sim.Machine().GroundTruth() {
			for pc, tr := range g.PCs {
				k := key{path, pc}
				if truth[k] == nil {
					truth[k] = &alpha.PCTruth{}
				}
				for i, n := range tr.Events {
					truth[k].Events[i] += n
				}
			}
		}
	}
	lists, err := coord.ValueLists(ctx, storage.Query{}, true)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[wire.ImageKey]bool{}
	for _, l := range lists {
		keys[l.Image] = true
	}
	var ks []wire.ImageKey
	for k := range keys {
		ks = append(ks, k)
	}
	recs, err := coord.Images(ctx, ks)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[wire.ImageKey]string{}
	for _, r := range recs {
		paths[r.Key] = r.Path
	}
	images := map[string]*elfimage.Image{}
	for _, name := range []string{"ptrchase", "hashdb"} {
		data, _ := workloads.Binary(name)
		im, err := elfimage.Parse(data, "/bin/"+name)
		if err != nil {
			t.Fatal(err)
		}
		images["/bin/"+name] = im
	}
	for _, l := range lists {
		path := paths[l.Image]
		im := images[path]
		if im == nil || valuemod.Kind(l.Kind) != valuemod.KindLatency {
			continue
		}
		k := key{path, 0x120000000 + l.Offset}
		tr := truth[k]
		if l.List.N < valuetest.MinSamples || tr == nil || tr.Events[alpha.EvLoads] == 0 {
			continue
		}
		if valuetest.SameLineFollower(im, k.pc) {
			followers++
			continue
		}
		lst := hotlist.List(l.List)
		cmp, err := valuetest.CompareLevels(&lst, valuetest.TruthLevels(tr))
		if err != nil {
			t.Errorf("%s %#x: %v", path, k.pc, err)
		}
		t.Logf("%s %#x: n %d τ %d: measured %.3f, truth %.3f", path, k.pc, l.List.N, l.List.Tau(), cmp.Got, cmp.Want)
		checked++
	}
	covered := map[string]bool{}
	for _, p := range paths {
		covered[p] = true
	}
	if !covered["/bin/ptrchase"] || !covered["/bin/hashdb"] {
		t.Errorf("the stored lists do not cover both programs: %v", paths)
	}
	return checked, followers
}

// TestValuesResumeAfterRestart: value records are numbered per host, once
// over its epochs, and a restarted host continues after what the stream
// and the database hold — so a second demo run on the same fleet, and a
// second dcpi node run on the same database, store every one of their
// records (their interrupts balance; taken for redeliveries, the second
// runs' records would be dropped and the lines would not balance).
func TestValuesResumeAfterRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	args := []string{"demo", "--hosts", "1", "--cpus", "1", "--aggregators", "1", "--seconds", "0.05", "--timing=false",
		"--dir", dir, "--limit", "1", "--values", "loadlat", "--http", "", "--metrics", ""}
	line := regexp.MustCompile(`(?m)^  alpha0\s+(\d+) interrupts = .*: balanced$`)
	for i := range 2 {
		out, _, err := run(t, args...)
		if err != nil || !line.MatchString(out) {
			t.Fatalf("demo run %d: %v\n%s", i+1, err, out)
		}
		if line.FindStringSubmatch(out)[1] == "0" {
			t.Fatalf("demo run %d: no interrupts\n%s", i+1, out)
		}
	}
	db := filepath.Join(t.TempDir(), "db")
	nodeArgs := []string{"node", "--db", db, "--cpus", "1", "--seconds", "0.05", "--timing=false", "--workloads", "ptrchase", "--values", "loadlat"}
	nline := regexp.MustCompile(`value sampling \(loadlat\): (\d+) interrupts = .*; delivered (\d+)`)
	for i := range 2 {
		out, _, err := run(t, nodeArgs...)
		m := nline.FindStringSubmatch(out)
		if err != nil || m == nil || m[1] != m[2] || m[1] == "0" {
			t.Fatalf("node run %d: %v\n%s", i+1, err, out)
		}
	}
	out, _, err := run(t, "values", "--db", db, "--limit", "1")
	if err != nil || !strings.Contains(out, "value sampling (loadlat)") {
		t.Fatalf("dcpi values on the node's database: %v\n%s", err, out)
	}
	// An unknown module is refused with the known ones.
	if _, _, err := run(t, "node", "--db", db, "--values", "nosuch"); err == nil || !strings.Contains(err.Error(), "loadlat") {
		t.Errorf("--values nosuch: %v", err)
	}
}
