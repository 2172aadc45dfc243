package cluster

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/internal/httpauth"
)

// TestTelemetryBeyondLoopbackNeedsAToken: an endpoint on every interface
// without a token file is refused before it listens; with one, /metrics
// answers 401 without the token and 200 with it, while /healthz stays
// open to probes. On loopback nothing changes.
func TestTelemetryBeyondLoopbackNeedsAToken(t *testing.T) {
	t.Setenv(httpauth.EnvTokenFile, "")
	if _, err := StartTelemetry("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), httpauth.EnvTokenFile) {
		t.Fatalf("every interface without a token: %v, want a refusal naming %s", err, httpauth.EnvTokenFile)
	}
	const token = "a-token-for-the-scraper-0123"
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(httpauth.EnvTokenFile, f)
	tel, err := StartTelemetry("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(tel.URL(), "http://"))
	base := "http://127.0.0.1:" + port
	get := func(path, bearer string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/metrics", ""); c != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", c)
	}
	if c := get("/metrics", token); c != http.StatusOK {
		t.Errorf("/metrics with the token: %d, want 200", c)
	}
	if c := get("/healthz", ""); c != http.StatusOK {
		t.Errorf("/healthz without the token: %d, want 200", c)
	}
	open, err := StartTelemetry("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	resp, err := http.Get(open.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("loopback /metrics: %d, want 200 without a token", resp.StatusCode)
	}
}
