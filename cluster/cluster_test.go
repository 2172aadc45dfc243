package cluster_test

import (
	"context"
	"crypto/tls"
	"slices"
	"strings"
	"testing"
	"time"

	"dcpi/cluster"
	"dcpi/cluster/clustertest"
	"dcpi/conservation"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/transport/auth"
)

// TestClusterConserves runs two hosts with call stacks through a whole
// cluster (NATS, three replicas, two aggregators), cuts an epoch on the
// way, and requires every sample the simulated hardware generated to be
// stored once or counted as dropped, in the flat view and the stack view,
// and the epoch the cut closed to be sealed. The hosts carry labels and
// keep per-process profiles (alpha0 of matmul, alpha1 of every image),
// which must not change the balance. One sample more generated than the
// run's does not balance: the check can fail.
func TestClusterConserves(t *testing.T) {
	cl := clustertest.Start(t, clustertest.Options{Replicas: 3, Aggregators: 2})
	for _, p := range cl.Peers() {
		checkRaftTLS(t, p.Addr)
	}
	progs, err := simhost.EmbeddedPrograms([]string{"matmul", "ptrchase"})
	if err != nil {
		t.Fatal(err)
	}
	var hosts []cluster.HostConfig
	for i, name := range []string{"alpha0", "alpha1"} {
		h := clustertest.Host(name, 2, 0.1, progs)
		h.Stacks = true
		h.Labels = map[string]string{"service": []string{"db", "web"}[i]}
		h.PerProcess = [][]string{{"matmul"}, {"all"}}[i]
		h.ProcessLabels = map[string]map[string]string{"matmul": {"role": "compute"}}
		hosts = append(hosts, h)
	}
	run, cut := clustertest.Run(t, cl, 0.1, 0.5, hosts...)
	if cut < 2 || run.Generated == 0 {
		t.Fatalf("cut %d, generated %d", cut, run.Generated)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.WaitSealed(ctx, cut, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	eps, err := cl.Coordinator().Epochs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sealed := false
	for _, e := range eps {
		sealed = sealed || e.Number == cut-1 && e.State == storage.EpochSealed
	}
	if !sealed {
		t.Fatalf("epoch %d not sealed: %+v", cut-1, eps)
	}
	lines, balanced, err := cl.Conservation(ctx, run, conservation.Views{Stacks: true})
	if err != nil || !balanced || len(lines) != 2 {
		t.Fatalf("conservation: %v %v\n%s", err, balanced, strings.Join(lines, "\n"))
	}
	checkLabelsAndPerProcess(ctx, t, cl)
	run.Generated++
	if lines, balanced, _ := cl.Conservation(ctx, run, conservation.Views{}); balanced {
		t.Fatalf("one sample more balances:\n%s", strings.Join(lines, "\n"))
	}
	if as, _ := cl.AggregatorStats(); as.Proposals == 0 || as.EntriesIn == 0 {
		t.Fatalf("aggregators proposed nothing: %+v", as)
	}
}

// checkLabelsAndPerProcess: the hosts registered their labels, and with
// per-process profiles on some samples were stored with their PID (PID
// 0 holds only the samples not kept per process).
func checkLabelsAndPerProcess(ctx context.Context, t *testing.T, cl *cluster.Cluster) {
	t.Helper()
	nodes, err := cl.Coordinator().Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range nodes {
		got[n.Host] = n.Labels["service"]
	}
	if got["alpha0"] != "db" || got["alpha1"] != "web" {
		t.Errorf("registered service labels %v, want alpha0=db alpha1=web", got)
	}
	for _, host := range []string{"alpha0", "alpha1"} {
		all, err := cl.Coordinator().Totals(ctx, storage.Query{Hosts: []string{host}}, true)
		if err != nil {
			t.Fatal(err)
		}
		merged, err := cl.Coordinator().Totals(ctx, storage.Query{Hosts: []string{host}, PIDs: []uint32{0}}, true)
		if err != nil {
			t.Fatal(err)
		}
		if all.Samples == 0 || merged.Samples >= all.Samples {
			t.Errorf("%s: %d samples, %d of them merged over processes: none kept per process", host, all.Samples, merged.Samples)
		}
		checkProcesses(ctx, t, cl, host, all.Samples)
	}
}

// checkProcesses: host's node sent a process record for matmul, with its
// process label, bound to host by its credentials; the samples of those
// processes, selected per host by PID (Query.HostPIDs), are some of the
// host's and none of another's.
func checkProcesses(ctx context.Context, t *testing.T, cl *cluster.Cluster, host string, all uint64) {
	t.Helper()
	var pids []uint32
	deadline := time.Now().Add(20 * time.Second)
	for len(pids) == 0 && time.Now().Before(deadline) {
		ps, err := cl.Coordinator().Processes(ctx, []string{host}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.Host != host {
				t.Fatalf("asked for %s's processes, got %+v", host, p)
			}
			if p.Binary == "/bin/matmul" {
				if p.Labels["role"] != "compute" {
					t.Errorf("%s: matmul's record %+v lacks role=compute", host, p)
				}
				pids = append(pids, p.PID)
			}
		}
		if len(pids) == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if len(pids) == 0 {
		t.Fatalf("%s: no process record of /bin/matmul", host)
	}
	mine, err := cl.Coordinator().Totals(ctx, storage.Query{HostPIDs: map[string][]uint32{host: pids}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if mine.Samples == 0 || mine.Samples >= all {
		t.Errorf("%s: matmul's processes %v have %d of the host's %d samples", host, pids, mine.Samples, all)
	}
	other := "alpha0"
	if host == other {
		other = "alpha1"
	}
	none, err := cl.Coordinator().Totals(ctx, storage.Query{Hosts: []string{other}, HostPIDs: map[string][]uint32{host: pids}}, true)
	if err != nil || none.Samples != 0 {
		t.Errorf("%s's PIDs on %s: %d samples, %v; want none", host, other, none.Samples, err)
	}
}

// checkRaftTLS fails t unless the Raft port at addr speaks TLS only, with
// a replica's certificate (the in-process cluster issues them).
func checkRaftTLS(t *testing.T, addr string) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}) // only looking at its certificate
	if err != nil {
		t.Fatalf("Raft at %s: %v", addr, err)
	}
	defer c.Close()
	if cs := c.ConnectionState(); len(cs.PeerCertificates) == 0 || !slices.Contains(cs.PeerCertificates[0].DNSNames, auth.RaftName) {
		t.Fatalf("Raft at %s presents no replica certificate", addr)
	}
}

// TestClusterContinuesAFleet: a second cluster on the first one's
// directory continues its fleet — same replicas, the hosts' streams
// resumed — and balances what it added beyond the baseline.
func TestClusterContinuesAFleet(t *testing.T) {
	dir := t.TempDir()
	progs, err := simhost.EmbeddedPrograms([]string{"hello"})
	if err != nil {
		t.Fatal(err)
	}
	var first uint64
	for i := range 2 {
		cl, err := cluster.Start(context.Background(), cluster.Config{Dir: dir, Replicas: 1, Aggregators: 1})
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if cl.Continued() != (i == 1) {
			t.Fatalf("run %d: continued %v", i+1, cl.Continued())
		}
		run, _ := clustertest.Run(t, cl, 0.05, 0, clustertest.Host("alpha0", 1, 0.05, progs))
		lines, balanced, err := cl.Conservation(context.Background(), run, conservation.Views{})
		if err != nil || !balanced {
			cl.Close()
			t.Fatalf("run %d: %v\n%s", i+1, err, strings.Join(lines, "\n"))
		}
		if i == 0 {
			first = run.Added.Stored + run.Added.Dropped()
		} else if b := cl.Baseline().Totals; b.Stored+b.Dropped() != first {
			t.Errorf("run 2's baseline %+v, want the %d samples run 1 stored", b, first)
		}
		cl.Close()
	}
}
