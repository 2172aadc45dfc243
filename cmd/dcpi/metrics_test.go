package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"dcpi/cluster/clustertest"
	"dcpi/cluster/demo"
	"dcpi/conservation"
	"dcpi/internal/telemetry"
	"dcpi/simhost"
	"dcpi/wire"
	"dcpi/workloads"
)

// TestDemoMetricsConserve runs a demo fleet (NATS, three replicas, two
// aggregators, two hosts with call stacks) and, with it still up, scrapes
// its one metrics endpoint: the scrape lints clean under client_golang's
// promlint rules and has every role's families, /healthz and /readyz
// answer 200, and the conservation identity holds from the metrics alone
// — samples the simulated hardware generated = samples each replica's
// database stored + every drop counter it holds — along with the
// identities on the way (driver, daemon, publisher) on every host.
func TestDemoMetricsConserve(t *testing.T) {
	cl := clustertest.Start(t, clustertest.Options{Replicas: 3, Aggregators: 2, Metrics: true})
	o := demo.Options{Hosts: 2, CPUs: 2, Seconds: 0.1, Stacks: true}
	progs, err := simhost.EmbeddedPrograms(workloads.Mixes()["default"])
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := clustertest.Run(t, cl, o.Seconds, 0.5, demo.Host(o, progs, 0), demo.Host(o, progs, 1))
	lines, balanced, err := cl.Conservation(context.Background(), stored, conservation.Views{Stacks: true})
	if err != nil || !balanced {
		t.Fatalf("conservation: %v\n%s", err, strings.Join(lines, "\n"))
	}
	if generated := checkFleetMetrics(t, cl.Telemetry().URL()); generated != float64(stored.Generated) {
		t.Errorf("the metrics say %v samples generated, the conservation check %v", generated, stored.Generated)
	}
	// The demo prints where its endpoint is.
	out, _, err := run(t, "demo", "--hosts", "1", "--cpus", "1", "--replicas", "1", "--aggregators", "1", "--seconds", "0.02",
		"--timing=false", "--http", "", "--metrics", "127.0.0.1:0", "--limit", "1")
	if err != nil || !regexp.MustCompile(`(?m)^dcpi demo: metrics at http://127\.0\.0\.1:\d+/metrics, health at http://127\.0\.0\.1:\d+/healthz and `).MatchString(out) {
		t.Errorf("the demo did not print its metrics URL: %v\n%s", err, out)
	}
}

// checkFleetMetrics checks a demo fleet's scrape and returns the samples
// generated, as the metrics say.
func checkFleetMetrics(t *testing.T, url string) float64 {
	t.Helper()
	status := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := status("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	// Followers may still be applying the last entries (and are not
	// ready while they do): scrape until every replica has applied what
	// the leader has committed and /readyz says so, giving up only when
	// they stop making progress.
	var s telemetry.Scrape
	lastProgress, prev := time.Now(), ""
	var notReady time.Time // since when caught up but not ready
	for {
		var err error
		if s, err = telemetry.Get(url + "/metrics"); err != nil {
			t.Fatalf("scrape: %v", err)
		}
		commit := s.Sum("dcpi_coordinator_raft_commit_index", map[string]string{"replica": leaderOf(s)})
		applied := s.By("dcpi_coordinator_raft_applied_index", "replica", nil)
		caughtUp := len(applied) == 3
		for _, a := range applied {
			caughtUp = caughtUp && a >= commit
		}
		code, body := status("/readyz")
		switch {
		case caughtUp && code == http.StatusOK:
		case caughtUp && !strings.Contains(body, "catching up"):
			// On a starved machine a follower can miss the leader's
			// heartbeats and know no leader until an election settles:
			// not ready for a while is allowed, staying so is not.
			if notReady.IsZero() {
				notReady = time.Now()
			} else if time.Since(notReady) > 30*time.Second {
				t.Fatalf("/readyz with every replica caught up, for 30 s: %d %s", code, body)
			}
		default:
			notReady = time.Time{}
		}
		if caughtUp && code == http.StatusOK {
			break
		}
		if now := fmt.Sprint(applied); now != prev {
			lastProgress, prev = time.Now(), now
		} else if time.Since(lastProgress) > 30*time.Second {
			t.Fatalf("replicas stopped short of the leader's commit index %v: applied %v", commit, applied)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, prefix := range []string{"dcpi_sim_", "dcpi_node_", "dcpi_transport_", "dcpi_nats_", "dcpi_jetstream_",
		"dcpi_aggregator_", "dcpi_coordinator_", "dcpi_storage_"} {
		found := false
		for name := range s {
			found = found || strings.HasPrefix(name, prefix)
		}
		if !found {
			t.Errorf("no %s* family in the scrape", prefix)
		}
	}

	generated := s.Sum("dcpi_sim_samples_generated_total", nil)
	if generated == 0 {
		t.Fatal("no samples generated")
	}
	applied := s.By("dcpi_coordinator_db_applied_index", "replica", nil)
	if len(applied) != 3 {
		t.Fatalf("applied index of %d replicas, want 3: %v", len(applied), applied)
	}
	for replica, index := range applied {
		at := map[string]string{"replica": replica}
		stored := s.Sum("dcpi_storage_samples_stored_total", at)
		dropped := s.By("dcpi_storage_samples_dropped_total", "reason", at)
		var d float64
		for _, n := range dropped {
			d += n
		}
		t.Logf("replica %s: %v generated = %v stored + %v dropped %v", replica, generated, stored, d, dropped)
		if stored+d != generated {
			t.Errorf("replica %s (log applied to %v): %v generated != %v stored + %v dropped %v", replica, index, generated, stored, d, dropped)
		}
		stackStored := s.Sum("dcpi_storage_stack_samples_stored_total", at)
		stackDropped := s.Sum("dcpi_storage_stack_samples_dropped_total", at)
		if stackStored == 0 || stackStored+stackDropped != generated {
			t.Errorf("replica %s: %v generated != %v with their stack stored + %v whose stack was dropped", replica, generated, stackStored, stackDropped)
		}
	}
	if n := s.Sum("dcpi_coordinator_raft_state", map[string]string{"state": "leader"}); n != 1 {
		t.Errorf("%v replicas report being the leader", n)
	}

	// On every host: the drivers took every interrupt, the daemon
	// published or counted each, and the publisher got them all out.
	hosts := s.By("dcpi_sim_samples_generated_total", "host", nil)
	if len(hosts) != 2 {
		t.Fatalf("generated by %d hosts, want 2: %v", len(hosts), hosts)
	}
	for host, gen := range hosts {
		at := map[string]string{"host": host}
		delivered := s.Sum("dcpi_node_samples_delivered_total", at)
		published := s.Sum("dcpi_node_samples_published_total", at)
		nodeDropped := s.Sum("dcpi_node_samples_dropped_total", map[string]string{"host": host, "reason": wire.DropOverflowFull})
		accepted := s.Sum("dcpi_transport_samples_accepted_total", at)
		sent := s.Sum("dcpi_transport_samples_published_total", at)
		queued := s.Sum("dcpi_transport_queue_samples", at)
		pubDropped := s.Sum("dcpi_transport_samples_dropped_total", at)
		if delivered != gen || published+nodeDropped != delivered || accepted != published || sent+queued+pubDropped != accepted {
			t.Errorf("host %s: generated %v, delivered %v = published %v + dropped %v; transport accepted %v = published %v + queued %v + dropped %v",
				host, gen, delivered, published, nodeDropped, accepted, sent, queued, pubDropped)
		}
		if s.Sum("dcpi_node_batches_total", at) == 0 || s.Sum("dcpi_transport_published_bytes_total", at) == 0 {
			t.Errorf("host %s: no batches or bytes published", host)
		}
	}
	if s.Sum("dcpi_aggregator_deltas_total", map[string]string{"outcome": "applied"}) == 0 ||
		s.Sum("dcpi_aggregator_propose_seconds", nil) == 0 || s.Sum("dcpi_aggregator_ack_seconds", nil) == 0 {
		t.Errorf("the aggregators report no applied deltas, proposals or acks")
	}
	if got := s.By("dcpi_aggregator_proposals_total", "aggregator", nil); len(got) != 2 {
		t.Errorf("proposals of %d aggregators, want 2: %v", len(got), got)
	}
	return generated
}

// TestRolesServeMetrics starts each server role as its command, in
// process, each with --metrics: nats-server, a one-replica coordinator, an
// aggregator and a node. Each endpoint's /readyz comes to answer 200, and
// its scrape lints clean and has the role's families, labelled as
// docs/metrics.md says.
func TestRolesServeMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	dir := t.TempDir()
	port := func() string {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("127.0.0.1:%d", p)
	}
	natsAddr, raftAddr := port(), port()
	natsURL := "nats://" + natsAddr
	roles := []struct {
		name, metrics string
		args          []string
		family        string
		labels        map[string]string
	}{
		{"nats-server", port(), []string{"nats-server", "--dir", filepath.Join(dir, "nats"), "--port", strings.Split(natsAddr, ":")[1]},
			"dcpi_jetstream_messages", nil},
		{"coordinator", port(), []string{"coordinator", "--id", "c1", "--data-dir", filepath.Join(dir, "c1"), "--nats", natsURL,
			"--raft-addr", raftAddr, "--peers", "c1=" + raftAddr}, "dcpi_coordinator_raft_commit_index", map[string]string{"replica": "c1"}},
		{"aggregator", port(), []string{"aggregator", "--nats", natsURL}, "dcpi_aggregator_proposals_total", nil},
		{"node", port(), []string{"node", "--nats", natsURL, "--host", "alpha1", "--cpus", "1", "--timing=false", "--workloads", "hello"},
			"dcpi_sim_samples_generated_total", map[string]string{"host": "alpha1"}},
	}
	type running struct {
		cancel context.CancelFunc
		done   chan error
	}
	var started []running
	defer func() {
		for i := len(started) - 1; i >= 0; i-- { // the node first, NATS last
			started[i].cancel()
			if err := <-started[i].done; err != nil {
				t.Errorf("%s: %v", roles[i].name, err)
			}
		}
	}()
	for _, r := range roles {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		root := newRootCommand()
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SetArgs(append(r.args, "--metrics", r.metrics))
		go func() { done <- root.ExecuteContext(ctx) }()
		started = append(started, running{cancel, done})
		url := "http://" + r.metrics
		// Ready, or the command ended: progress, not a clock, ends the wait.
		for {
			select {
			case err := <-done:
				done <- err
				t.Fatalf("%s ended before it was ready: %v", r.name, err)
			default:
			}
			resp, err := http.Get(url + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		s, err := telemetry.Get(url + "/metrics")
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		found := s.Has(r.family)
		for k, v := range r.labels {
			_, ok := s.By(r.family, k, r.labels)[v]
			found = found && ok
		}
		if !found {
			t.Errorf("%s: no %s%v in its scrape", r.name, r.family, r.labels)
		}
	}
}

// leaderOf is the replica the scrape says leads ("" if none).
func leaderOf(s telemetry.Scrape) string {
	for replica, v := range s.By("dcpi_coordinator_raft_state", "replica", map[string]string{"state": "leader"}) {
		if v == 1 {
			return replica
		}
	}
	return ""
}

// freePort is a loopback port free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
