package telemetry

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	tSamples = Counter("dcpi_test_samples_total", "Samples counted.", "reason")
	tDepth   = Gauge("dcpi_test_queue_bytes", "Bytes queued.")
)

type testCollector struct{ n *atomic.Uint64 }

func (c testCollector) Describe(ch chan<- *prometheus.Desc) { Descs{tSamples, tDepth}.Describe(ch) }
func (c testCollector) Collect(ch chan<- prometheus.Metric) {
	tSamples.Emit(ch, float64(c.n.Load()), "a.b")
	tSamples.Emit(ch, 2, "c")
	tDepth.Emit(ch, 7)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestServerEndpoints serves a registry and readiness conditions: /readyz
// answers 503 naming each unmet condition until every one holds, /healthz
// 200 throughout, and /metrics a scrape that lints clean and reads back
// the collector's values, labelled as registered.
func TestServerEndpoints(t *testing.T) {
	reg := NewRegistry()
	var n atomic.Uint64
	n.Store(40)
	if err := prometheus.WrapRegistererWith(prometheus.Labels{"host": "alpha1"}, reg).Register(testCollector{&n}); err != nil {
		t.Fatal(err)
	}
	ready := &Readiness{}
	srv, err := Serve("127.0.0.1:0", reg, ready, "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	if code, body := get(t, srv.URL()+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no role has registered") {
		t.Errorf("readyz with no conditions: %d %q, want 503 saying nothing registered", code, body)
	}
	var connected, caughtUp atomic.Bool
	ready.Add("nats", func() error {
		if !connected.Load() {
			return errors.New("not connected")
		}
		return nil
	})
	ready.Add("raft", func() error {
		if !caughtUp.Load() {
			return errors.New("catching up")
		}
		return nil
	})
	if code, body := get(t, srv.URL()+"/readyz"); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "nats: not connected") || !strings.Contains(body, "raft: catching up") {
		t.Errorf("readyz with both unmet: %d %q", code, body)
	}
	connected.Store(true)
	if code, body := get(t, srv.URL()+"/readyz"); code != http.StatusServiceUnavailable ||
		strings.Contains(body, "nats") || !strings.Contains(body, "raft: catching up") {
		t.Errorf("readyz with raft unmet: %d %q", code, body)
	}
	caughtUp.Store(true)
	if code, body := get(t, srv.URL()+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("readyz when ready: %d %q", code, body)
	}
	if code, body := get(t, srv.URL()+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	if code, body := get(t, srv.URL()+"/nope"); code != http.StatusNotFound || !strings.Contains(body, "/metrics") {
		t.Errorf("unknown page: %d %q", code, body)
	}

	s, err := Get(srv.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	n.Add(2)
	if got := s.Sum("dcpi_test_samples_total", nil); got != 42 {
		t.Errorf("samples summed over reasons = %v, want 42", got)
	}
	if got := s.By("dcpi_test_samples_total", "reason", map[string]string{"host": "alpha1"}); got["a.b"] != 40 || got["c"] != 2 {
		t.Errorf("samples by reason = %v", got)
	}
	if s.Sum("dcpi_test_queue_bytes", map[string]string{"host": "alpha2"}) != 0 || !s.Has("go_goroutines") {
		t.Errorf("label match or the runtime's collectors wrong")
	}
	ready.Remove("raft")
	ready.Add("nats", func() error { return errors.New("gone") })
	if code, body := get(t, srv.URL()+"/readyz"); code != http.StatusServiceUnavailable || strings.Count(body, "nats") != 1 {
		t.Errorf("a replaced condition: %d %q", code, body)
	}
}

// TestParseScrapeLints: a counter without _total, or a family without
// help, is a promlint problem, reported with the metric's name.
func TestParseScrapeLints(t *testing.T) {
	for _, text := range []string{
		"# HELP dcpi_bad_samples Samples.\n# TYPE dcpi_bad_samples counter\ndcpi_bad_samples 3\n",
		"# TYPE dcpi_bad_total counter\ndcpi_bad_total 3\n",
		"# HELP dcpi_bad_latency_milliseconds Latency.\n# TYPE dcpi_bad_latency_milliseconds gauge\ndcpi_bad_latency_milliseconds 3\n",
	} {
		if _, err := ParseScrape([]byte(text)); err == nil || !strings.Contains(err.Error(), "dcpi_bad_") {
			t.Errorf("ParseScrape(%q) = %v, want a promlint problem naming the metric", text, err)
		}
	}
	if _, err := ParseScrape([]byte("not { an exposition\n")); err == nil {
		t.Errorf("malformed exposition parsed")
	}
	if s, err := ParseScrape([]byte("# HELP dcpi_ok_total Fine.\n# TYPE dcpi_ok_total counter\ndcpi_ok_total 3\n")); err != nil || s.Sum("dcpi_ok_total", nil) != 3 {
		t.Errorf("a clean scrape: %v, %v", s, err)
	}
}
