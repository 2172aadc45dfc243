package main

import (
	"strings"
	"testing"
)

// TestAdministrativeCommands: epoch cut commits a cut and says which
// epochs closed and opened; coordinator remove commits through the
// leader (Raft removes a server the group does not have as a no-op) and
// the single replica stays leader of an unchanged group.
func TestAdministrativeCommands(t *testing.T) {
	url, coord := startTestCluster(t)
	out, _, err := run(t, "epoch", "cut", "--nats", url)
	if err != nil || out != "epoch 1 closing, epoch 2 open\n" {
		t.Fatalf("epoch cut: %q, %v", out, err)
	}
	eps, err := coord.Epochs(t.Context())
	if err != nil || len(eps) != 2 {
		t.Fatalf("epochs after the cut: %+v, %v", eps, err)
	}
	out, _, err = run(t, "coordinator", "remove", "c9", "--nats", url)
	if err != nil || out != "remove [c9]: committed\n" {
		t.Fatalf("coordinator remove c9: %q, %v", out, err)
	}
	if out, _, err = run(t, "epoch", "cut", "--nats", url); err != nil || !strings.HasPrefix(out, "epoch 2 closing") {
		t.Fatalf("epoch cut after the removal: %q, %v", out, err)
	}
}
