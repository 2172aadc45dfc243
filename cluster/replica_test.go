package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

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
