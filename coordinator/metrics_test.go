package coordinator

import (
	"context"
	"dcpi/wire/coordproto"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dcpi/internal/telemetry"
	"dcpi/storage"
	"dcpi/transport/natstest"
	"dcpi/wire"
)

func TestRequestLabels(t *testing.T) {
	for _, c := range []struct{ subject, kind, request string }{
		{coordproto.SubjectQuery + coordproto.QueryTotals, "query", "totals"},
		{coordproto.SubjectLinearQuery + coordproto.QueryProfile, "lquery", "profile"},
		{coordproto.SubjectReplica + "c2.query." + coordproto.QueryEpochs, "query", "epochs"},
		{coordproto.SubjectPropose, "command", "propose"},
		{coordproto.SubjectMembersAdd, "command", "members.add"},
		{coordproto.SubjectUploadPaths, "command", "paths.upload"},
		{coordproto.SubjectHeartbeat + ".*", "command", "heartbeat"},
		{coordproto.SubjectLinearQuery + coordproto.QueryApplied + ".*", "lquery", "applied"},
	} {
		if k, r := requestLabels(c.subject); k != c.kind || r != c.request {
			t.Errorf("requestLabels(%q) = %q, %q; want %q, %q", c.subject, k, r, c.kind, c.request)
		}
	}
}

// TestReplicaReadyAndMetrics: one replica of three, alone, elects no
// leader, so its /readyz answers 503 saying so; once the others start it
// answers 200. Then every replica's scrape lints clean, and after a
// proposal each reports, from its own database, the samples and drops
// proposed, and the leader its commit latency.
func TestReplicaReadyAndMetrics(t *testing.T) {
	c := &cluster{t: t, url: natstest.StartServer(t, natstest.Options{}).URL(), addrs: freeAddrs(t, 3)}
	root := t.TempDir()
	for i := range 3 {
		c.ids = append(c.ids, []string{"r1", "r2", "r3"}[i])
		c.dirs = append(c.dirs, filepath.Join(root, c.ids[i]))
		c.boot = append(c.boot, Peer{ID: c.ids[i], Addr: c.addrs[i]})
	}
	c.reps = make([]*Replica, 3)
	t.Cleanup(func() {
		for i := range c.reps {
			c.stop(i)
		}
	})
	c.start(0)
	reg := prometheus.NewRegistry()
	if err := reg.Register(c.reps[0].Collector()); err != nil {
		t.Fatal(err)
	}
	ready := &telemetry.Readiness{}
	ready.Add("coordinator r1", c.reps[0].Ready)
	srv := httptest.NewServer(telemetry.Handler(reg, ready))
	defer srv.Close()
	readyz := func() (int, string) {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Without a quorum no leader can be elected, however long it waits.
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "coordinator r1: no Raft leader known") {
		t.Fatalf("readyz of a replica without a quorum: %d %q", code, body)
	}
	s, err := telemetry.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if s.Sum("dcpi_coordinator_raft_leader_known", nil) != 0 || s.Sum("dcpi_coordinator_raft_state", map[string]string{"state": "leader"}) != 0 {
		t.Errorf("a lone replica reports a leader")
	}
	c.start(1)
	c.start(2)
	waitFor(t, "readyz 200", 20*time.Second, func() bool { code, _ := readyz(); return code == http.StatusOK })

	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Random batches carry drops only now and then: draw until some do,
	// so that the drop counters are seen whatever the seed.
	st := newStreams(testRand(t))
	var sent []storage.Delta
	var samples uint64
	drops := map[string]float64{}
	for len(drops) == 0 && len(sent) < 120 {
		more := st.deltas(12, 20, 1, "alpha1", "alpha2")
		sent = append(sent, more...)
		for _, d := range more {
			samples += d.Batch.Total()
			for name, n := range d.Batch.Drops {
				if n > 0 {
					drops[name] += float64(n)
				}
			}
		}
	}
	if len(drops) == 0 {
		t.Fatal("the proposed batches carry no drops: the test would not see the drop counters")
	}
	out, err := cl.Propose(ctx, sent, []*wire.ImageRecord{imageRec(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(sent) {
		t.Fatalf("%d outcomes for %d deltas", len(out), len(sent))
	}
	c.converged()
	leaders := 0
	for i, r := range c.reps {
		reg := prometheus.NewRegistry()
		if err := prometheus.WrapRegistererWith(prometheus.Labels{"replica": c.ids[i]}, reg).Register(r.Collector()); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(telemetry.Handler(reg, ready))
		s, err := telemetry.Get(srv.URL + "/metrics")
		srv.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.ids[i], err)
		}
		if got := s.Sum("dcpi_storage_samples_stored_total", nil); got != float64(samples) {
			t.Errorf("%s: %v samples stored, %d proposed", c.ids[i], got, samples)
		}
		got := s.By("dcpi_storage_samples_dropped_total", "reason", nil)
		maps.DeleteFunc(got, func(_ string, n float64) bool { return n == 0 })
		if !maps.Equal(got, drops) {
			t.Errorf("%s: samples dropped by reason %v, proposed %v", c.ids[i], got, drops)
		}
		if s.Sum("dcpi_coordinator_db_applied_index", nil) == 0 || s.Sum("dcpi_coordinator_fsm_apply_seconds", nil) == 0 ||
			s.Sum("dcpi_coordinator_epochs", map[string]string{"state": "open"}) != 1 || s.Sum("dcpi_coordinator_epoch", nil) != 1 {
			t.Errorf("%s: applied index, apply latency or epochs missing", c.ids[i])
		}
		if s.Sum("dcpi_coordinator_raft_state", map[string]string{"state": "leader"}) == 1 {
			leaders++
			if s.Sum("dcpi_coordinator_raft_commit_seconds", nil) == 0 ||
				s.Sum("dcpi_coordinator_request_seconds", map[string]string{"kind": "command", "request": "propose"}) == 0 {
				t.Errorf("%s: the leader observed no commit or propose latency", c.ids[i])
			}
		}
	}
	if leaders != 1 {
		t.Errorf("%d replicas report being the leader", leaders)
	}
}
