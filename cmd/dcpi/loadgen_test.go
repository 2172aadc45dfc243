package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"dcpi/loadgen"
	"dcpi/loadgen/fleet"
	"dcpi/storage"
)

// TestLoadgenConservation records a short run of a 2-CPU host and
// replays it as three agents against a cluster for three seconds, with
// an epoch cut each second: the cluster must hold exactly what the
// agents published, under three distinct host names each holding its
// share, spread over the epochs the agents followed, each cut sealed.
func TestLoadgenConservation(t *testing.T) {
	dir := t.TempDir()
	recPath := filepath.Join(dir, "host.dcpiload")
	out, _, err := run(t, "loadgen", "record", "--out", recPath, "--seconds", "0.3", "--cpus", "2")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out))
	url, coord := startTestCluster(t)
	out, _, err = run(t, "loadgen", "run", "--recording", recPath, "--nats", url, "--hosts", "3", "--seconds", "3", "--prefix", "lgt", "--cut-every", "1s", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r fleet.Result
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &r); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	t.Logf("%+v", r)
	if !r.Conserved || r.Stored != r.Generated || r.Generated == 0 || r.Batches == 0 {
		t.Fatalf("generated %d in %d batches, the cluster holds %d (conserved %v)", r.Generated, r.Batches, r.Stored, r.Conserved)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Each agent connected on its own host's key, registered and beat as
	// a node does.
	if !r.HostKeys || r.Heartbeats == 0 {
		t.Errorf("agents on host keys %v, %d heartbeats answered; want host keys and heartbeats", r.HostKeys, r.Heartbeats)
	}
	// The agents followed the cuts: every cut sealed (each agent acked
	// it), and the samples lie in more than one epoch.
	if r.Cuts == 0 || r.Sealed != r.Cuts || r.CutFailures != 0 || r.Acks < uint64(3*r.Cuts) || r.AgentCuts < 3 {
		t.Errorf("%d cuts (%d failed), %d sealed; agents moved %d times, acked %d: want every cut sealed, acked by all three",
			r.Cuts, r.CutFailures, r.Sealed, r.AgentCuts, r.Acks)
	}
	eps, err := coord.Epochs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var perEpoch []uint64
	withSamples := 0
	for _, e := range eps {
		tot, err := coord.Totals(ctx, storage.Query{Epochs: []uint64{e.Number}}, true)
		if err != nil {
			t.Fatal(err)
		}
		perEpoch = append(perEpoch, tot.Samples)
		if tot.Samples > 0 {
			withSamples++
		}
	}
	if withSamples < 2 {
		t.Errorf("samples per epoch %v: want them in more than one epoch", perEpoch)
	}
	nodes, err := coord.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var registered []string
	for _, n := range nodes {
		registered = append(registered, n.Host)
	}
	for _, h := range []string{"lgt0000", "lgt0001", "lgt0002"} {
		if !slices.Contains(registered, h) {
			t.Errorf("agent %s not registered (nodes %v)", h, registered)
		}
	}
	// Each agent is its own host in storage, holding its own share; a
	// fourth name holds nothing.
	want := []string{"lgt0000", "lgt0001", "lgt0002", "lgt0003"}
	var sum uint64
	for _, h := range want {
		tot, err := coord.Totals(ctx, storage.Query{Hosts: []string{h}}, true)
		if err != nil {
			t.Fatal(err)
		}
		n := tot.Samples + tot.Unknown
		for _, d := range tot.Drops {
			n += d
		}
		if (n == 0) != (h == "lgt0003") {
			t.Errorf("host %s holds %d samples", h, n)
		}
		sum += n
	}
	if sum != r.Generated {
		t.Errorf("the hosts hold %d samples together, the agents published %d", sum, r.Generated)
	}
}

// TestLoadgenRefusesRecording: a recording of another version, or
// damaged, is refused with an error that says so, before any load; so are
// a heartbeat interval of zero and epoch cuts without heartbeats.
func TestLoadgenRefusesRecording(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "host.dcpiload")
	if _, _, err := run(t, "loadgen", "record", "--out", good, "--seconds", "0.05", "--cpus", "1"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	v := slices.Clone(data)
	binary.BigEndian.PutUint16(v[len(loadgen.Magic):], loadgen.Version+1)
	damaged := slices.Clone(data)
	damaged[len(damaged)/2] ^= 1
	for name, b := range map[string][]byte{"version": v, "checksum": damaged} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := run(t, "loadgen", "run", "--recording", p, "--nats", "nats://127.0.0.1:1", "--hosts", "1", "--seconds", "1")
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error about the %s", name, err, name)
		}
	}
	// A heartbeat interval of nothing is refused before any load, not a
	// ticker's panic.
	_, _, err = run(t, "loadgen", "run", "--recording", good, "--nats", "nats://127.0.0.1:1", "--hosts", "1", "--seconds", "1", "--heartbeat", "0s")
	if err == nil || !strings.Contains(err.Error(), "--heartbeat > 0") {
		t.Errorf("--heartbeat 0s: %v, want an error naming --heartbeat", err)
	}
	// Cuts with agents that do not heartbeat would measure nothing: they
	// follow no epochs.
	_, _, err = run(t, "loadgen", "run", "--recording", good, "--nats", "nats://127.0.0.1:1", "--hosts", "1", "--seconds", "1", "--cut-every", "1s", "--host-keys=false")
	if err == nil || !strings.Contains(err.Error(), "--cut-every") {
		t.Errorf("--cut-every without --host-keys: %v, want an error naming --cut-every", err)
	}
}
