package cluster_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/transport/auth"
)

// TestStartReplicaRaftRefusals: a replica given a missing, shared or
// damaged Raft credential, another replica's, or none beyond loopback,
// refuses to start with one error and makes nothing: no data directory,
// no NATS server.
func TestStartReplicaRaftRefusals(t *testing.T) {
	keys, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c2, err := keys.IssueRaftCredential("c2")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared.pem")
	data, _ := os.ReadFile(c2.File)
	os.WriteFile(shared, data, 0o644)
	damaged := filepath.Join(dir, "damaged.pem")
	os.WriteFile(damaged, data[:len(data)-100], 0o600)
	for _, tc := range []struct {
		name, addr, creds string
		want              error // nil: any error
	}{
		{"missing", "127.0.0.1:0", filepath.Join(dir, "missing.pem"), auth.ErrRaftCredential},
		{"shared", "127.0.0.1:0", shared, auth.ErrRaftCredential},
		{"damaged", "127.0.0.1:0", damaged, auth.ErrRaftCredential},
		{"another replica's", "127.0.0.1:0", c2.File, nil},
		{"none beyond loopback", "0.0.0.0:0", "", coordinator.ErrRaftInsecure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			data := filepath.Join(t.TempDir(), "c1")
			cfg.Coordinator = config.Coordinator{ID: "c1", RaftAddr: tc.addr, RaftTLS: tc.creds, DataDir: data}
			_, err := cluster.StartReplica(context.Background(), cluster.ReplicaConfig{Config: cfg, EmbedNATS: true})
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("StartReplica = %v, want %v", err, tc.want)
			}
			t.Log(err)
			if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused replica made %s: %v", data, err)
			}
		})
	}
}

// TestReplicaServesTheWebUI: with HTTPAddr a replica serves the web UI
// over the cluster's profiles (dcpi coordinator --http), whose epochs page
// lists the replica's first epoch, and Close stops it.
func TestReplicaServesTheWebUI(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := l.Addr().String()
	l.Close()
	t.Setenv("DCPI_AUTH_REGISTRY", filepath.Join(t.TempDir(), "registry"))
	cfg := config.Defaults()
	cfg.Coordinator = config.Coordinator{ID: "c1", RaftAddr: raftAddr, DataDir: filepath.Join(t.TempDir(), "c1"), Peers: []string{"c1=" + raftAddr}}
	cfg.NATS.EmbedPort = 0 // chosen by the OS
	tel, err := cluster.StartTelemetry("")
	if err != nil {
		t.Fatal(err)
	}
	r, err := cluster.StartReplica(t.Context(), cluster.ReplicaConfig{Config: cfg, EmbedNATS: true, Telemetry: tel, HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	url := r.WebURL()
	if url == "" {
		r.Close()
		t.Fatal("no web UI URL")
	}
	var body []byte
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(url + "/api/v1/epochs")
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"number": 1,`) {
				break
			}
		}
		if time.Now().After(deadline) {
			r.Close()
			t.Fatalf("GET /api/v1/epochs: %v %s", err, body)
		}
	}
	r.Close()
	if _, err := http.Get(url + "/"); err == nil {
		t.Errorf("the web UI still answers after Close")
	}
}
