package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"dcpi/analysis/profileme"
	"dcpi/analysis/symbolize"
	"dcpi/cluster/clustertest"
	"dcpi/cluster/demo"
	"dcpi/conservation"
	"dcpi/coordinator"
	"dcpi/hwsim"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/workloads"
)

var meConservationRE = regexp.MustCompile(`profileme: (\d+) instructions tagged = (\d+) stored \+ (\d+) dropped \([^)]*\): (\S+)`)

// checkMeConservation requires the ProfileMe line in out to balance, with
// something tagged, and the database at db to hold what it says.
func checkMeConservation(t *testing.T, out, db string) {
	t.Helper()
	checkStoredBalance(t, out, db, meConservationRE, "ProfileMe ", "tagged", (*storage.DB).MeTotals, func(stored uint64, sdb *storage.DB) {
		if stored == 0 {
			t.Fatalf("ProfileMe conservation: nothing stored")
		}
		rows := 0
		if err := sdb.MeProfile(t.Context(), storage.Query{}, func(*storage.MeRow) error { rows++; return nil }); err != nil || rows == 0 {
			t.Fatalf("%d ProfileMe rows stored (%v)", rows, err)
		}
	})
}

// TestProfileMeEndToEnd: dcpi profile --profileme on two hosts stores
// every instruction the ProfileMe hardware tagged, or counts it dropped,
// in the profile database, beside the counter profile's own balance.
func TestProfileMeEndToEnd(t *testing.T) {
	db := filepath.Join(t.TempDir(), "me.db")
	_, stderr, err := run(t, "profile", "-o", db, "--profileme", "--hosts", "2", "--cpus", "2", "sort", ":", "ccdriver")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	checkConservation(t, stderr, db)
	checkMeConservation(t, stderr, db)

	// dcpi me reads it back: the summary's samples are every attributed
	// sample, and a procedure's listing sums to its summary line.
	out, _, err := run(t, "me", "--db", db, "--json", "--limit", "0")
	if err != nil {
		t.Fatal(err)
	}
	var rep profileme.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sdb, err := storage.Open(db, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stored, _, _, err := sdb.MeTotals(storage.Query{})
	sdb.Close()
	if err != nil || rep.Samples != stored || len(rep.Procs) == 0 || rep.Listing {
		t.Fatalf("dcpi me: %d samples in %d procedures (listing %v); the database holds %d (%v)", rep.Samples, len(rep.Procs), rep.Listing, stored, err)
	}
	top := rep.Procs[0]
	out, _, err = run(t, "me", "--db", db, "--json", "--image", top.Image, top.Procedure)
	if err != nil {
		t.Fatal(err)
	}
	var list profileme.Report
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, in := range list.Procs[0].Instrs {
		sum += in.Samples.Samples
	}
	if !list.Listing || len(list.Procs) != 1 || sum != top.Samples.Samples || sum == 0 {
		t.Fatalf("listing of %s: %d instruction samples, summary says %d", top.Procedure, sum, top.Samples.Samples)
	}
	text, _, err := run(t, "me", "--db", db, "--image", top.Image, top.Procedure)
	if err != nil || !strings.Contains(text, "squashed") || !strings.Contains(text, "±") || !regexp.MustCompile(`(?m)^0x[0-9a-f]+ .*  (ldq|ldl|stq|addq|lda|bne|beq|br) `).MatchString(text) {
		t.Fatalf("listing: %v\n%s", err, text)
	}
	// The web's ProfileMe page shows what dcpi me prints.
	summary, _, err := run(t, "me", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if page := webReport(t, db, "/me"); page != summary {
		t.Errorf("the web's /me shows\n%s\ndcpi me prints\n%s", page, summary)
	}
	checkMePprof(t, db, stored)
	// --paths: the (PC, history) counts the pipeline carried cover every
	// attributed sample (no history was dropped), and some reconstruct.
	out, _, err = run(t, "me", "--db", db, "--paths", "--json", "--limit", "5")
	if err != nil {
		t.Fatal(err)
	}
	var paths profileme.PathsReport
	if err := json.Unmarshal([]byte(out), &paths); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if paths.Samples != stored || paths.Reconstructed == 0 || len(paths.Paths) == 0 ||
		paths.Reconstructed+paths.Ambiguous+paths.NoPath+paths.NoCode != paths.Samples {
		t.Fatalf("--paths: %+v; %d samples stored", paths, stored)
	}
	// --addrs: the hot lists of the top procedure's loads and stores came
	// through the pipeline, each address's estimate within its list.
	out, _, err = run(t, "me", "--db", db, "--addrs", top.Procedure, "--image", top.Image, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var addrs []profileme.AddrInstr
	if err := json.Unmarshal([]byte(out), &addrs); err != nil || len(addrs) == 0 {
		t.Fatalf("--addrs: %v\n%s", err, out)
	}
	for _, in := range addrs {
		var share float64
		for _, a := range in.Addrs {
			share += a.Share
		}
		if in.Samples == 0 || len(in.Addrs) == 0 || share > 1+1e-9 && in.Tau == 1 {
			t.Fatalf("--addrs: %+v", in)
		}
	}
	if _, _, err := run(t, "me", "--db", db, "no_such_procedure"); err == nil || !strings.Contains(err.Error(), "no ProfileMe samples in procedure") {
		t.Errorf("unknown procedure: %v", err)
	}
}

// TestDemoProfileMeBalances: the demo's cluster with --profileme carries
// every tagged instruction through NATS, the aggregators and Raft into
// the replicas' Pebble, or counts it dropped; dcpi me --addrs reads the
// address lists from the cluster (--nats) with the shared filters as it
// reads them from the stopped replica's database (--db).
func TestDemoProfileMeBalances(t *testing.T) {
	cl := clustertest.Start(t, clustertest.Options{})
	o := demo.Options{Hosts: 2, CPUs: 1, Seconds: 0.05, Model: "ev5", ProfileMe: true}
	progs, err := simhost.EmbeddedPrograms(workloads.Mixes()["default"])
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := clustertest.Run(t, cl, o.Seconds, 0.5, demo.Host(o, progs, 0), demo.Host(o, progs, 1))
	ctx := context.Background()
	lines, balanced, err := cl.Conservation(ctx, stored, conservation.Views{ProfileMe: true})
	if err != nil || !balanced || len(lines) != 2 {
		t.Fatalf("conservation: %v %v\n%s", err, balanced, strings.Join(lines, "\n"))
	}
	if !regexp.MustCompile(`conservation: [1-9]\d* samples generated .*: balanced`).MatchString(lines[0]) {
		t.Fatalf("no balanced conservation line: %s", lines[0])
	}
	m := meConservationRE.FindStringSubmatch(lines[1])
	if m == nil || m[4] != "balanced" || m[1] == "0" || m[2] == "0" {
		t.Fatalf("no balanced ProfileMe conservation line with samples: %s", lines[1])
	}
	// Each query's filters on the cluster, then on the database: --label
	// needs the cluster's registry, and rack=r0 is alpha0.
	src := coordinator.NewReader(cl.Coordinator(), true)
	all, err := profileme.Addresses(ctx, symbolize.New(src), src, profileme.AddrQuery{Interval: 1})
	if err != nil || len(all) == 0 {
		t.Fatalf("address lists in the cluster: %d (%v)", len(all), err)
	}
	proc, pc := all[0].Procedure, fmt.Sprintf("%#x", all[0].Address)
	type addrQuery struct{ cluster, local []string }
	queries := []addrQuery{
		{[]string{"--addrs", proc}, nil},
		{[]string{"--addrs", pc, "--limit", "2"}, nil},
		{[]string{"--addrs", proc, "--label", "rack=r0"}, []string{"--addrs", proc, "--host", "alpha0"}},
		{[]string{"--addrs", proc, "--host", "alpha1", "--epoch", "1"}, nil},
		{[]string{"--addrs", proc, "--epoch", "2"}, nil}, // a short run may store none
	}
	var fromCluster []string
	for _, q := range queries {
		out, _, err := run(t, append([]string{"me", "--nats", cl.URL(), "--linearizable", "--json"}, q.cluster...)...)
		fromCluster = append(fromCluster, fmt.Sprintf("%s%v", out, err))
	}
	// The first lists something, and the filtered ones not all of it.
	if !strings.HasPrefix(fromCluster[0], "[") ||
		fromCluster[2] == fromCluster[0] || fromCluster[3] == fromCluster[0] || fromCluster[4] == fromCluster[0] {
		t.Fatalf("dcpi me --addrs --nats: %q", fromCluster)
	}
	cl.Close() // the database is the stopped replica's
	for i, q := range queries {
		args := q.local
		if args == nil {
			args = q.cluster
		}
		out, _, err := run(t, append([]string{"me", "--db", filepath.Join(cl.Dir(), "c1"), "--json"}, args...)...)
		if local := fmt.Sprintf("%s%v", out, err); local != fromCluster[i] {
			t.Errorf("dcpi me %v: the cluster's\n%s\nthe database's %v\n%s", q.cluster, fromCluster[i], args, local)
		}
	}
}

// checkMePprof: dcpi me --pprof exports every stored sample once, with the
// ProfileMe sample types, each estimate k·S of its samples.
func checkMePprof(t *testing.T, db string, stored uint64) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "me.pb.gz")
	if _, _, err := run(t, "me", "--db", db, "--pprof", file); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	p, err := profile.Parse(fh)
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, st := range p.SampleType {
		col[st.Type] = i
	}
	for _, name := range []string{"fetched", "retired", "abort_interrupt", "dmiss", "head_cycles", "samples"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("no sample type %s in %v", name, p.SampleType)
		}
	}
	S := hwsim.DefaultProfileMe().MeanInterval()
	var samples, fetched, retired, aborted int64
	for _, s := range p.Sample {
		samples += s.Value[col["samples"]]
		fetched += s.Value[col["fetched"]]
		retired += s.Value[col["retired"]]
		aborted += s.Value[col["abort_interrupt"]] + s.Value[col["abort_trap"]]
		if len(s.Location) != 1 || s.Location[0].Mapping == nil {
			t.Fatalf("sample %v: want one mapped location", s)
		}
	}
	if uint64(samples) != stored || float64(fetched) != float64(samples)*S || retired+aborted != fetched || p.DefaultSampleType != "fetched" || p.Period != int64(S) {
		t.Fatalf("pprof: %d samples (stored %d), fetched %d, retired %d + aborted %d, default %s, period %d",
			samples, stored, fetched, retired, aborted, p.DefaultSampleType, p.Period)
	}
}

// TestDemoProfileMeEV6Paired: the demo's cluster of 21264 hosts sampling
// pairs carries every tagged instruction into the replicas' Pebble, or
// counts it dropped, and dcpi me reads wasted slots and paths back from
// the cluster; --me-paired alone is refused.
func TestDemoProfileMeEV6Paired(t *testing.T) {
	if _, _, err := run(t, "profile", "--me-paired", "-o", filepath.Join(t.TempDir(), "x.db"), "tiny"); err == nil || !strings.Contains(err.Error(), "me_paired needs") && !strings.Contains(err.Error(), "me-paired needs") {
		t.Fatalf("--me-paired alone: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "fleet")
	out, _, err := run(t, "demo", "--hosts", "2", "--cpus", "1", "--replicas", "1", "--aggregators", "1", "--seconds", "0.05",
		"--model", "ev6", "--stacks=false", "--profileme", "--me-paired", "--dir", dir, "--limit", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := meConservationRE.FindStringSubmatch(out)
	if m == nil || m[4] != "balanced" || m[1] == "0" || m[2] == "0" {
		t.Fatalf("no balanced ProfileMe conservation line with samples:\n%s", out)
	}
}

// webReport is the report on the web page path serves over the local
// database at dir: what its <pre id="report"> holds, unescaped.
func webReport(t *testing.T, dir, path string) string {
	t.Helper()
	code, body := apiGet(t, dir, path)
	m := regexp.MustCompile(`(?s)<pre class="report" id="report">(.*?)</pre>`).FindSubmatch(body)
	if code != 200 || m == nil {
		t.Fatalf("%s: status %d, no report:\n%s", path, code, body)
	}
	return html.UnescapeString(string(m[1]))
}
