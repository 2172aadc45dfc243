// Package clustertest starts whole profiling clusters for tests, in the
// spirit of hashicorp/raft's MakeCluster and nats-server's
// test.RunServer: every role in the test's process on loopback ports the
// OS chooses, data in the test's temporary directory, and shutdown
// registered with t.Cleanup. It parses no flags and adds no hooks to the
// cluster's options: a test drives the cluster through package cluster's
// API, and looks at what it stored through the coordinator's client.
package clustertest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/simhost"
	"dcpi/transport"
)

// Options shape a test cluster; the zero value is one replica and one
// aggregator with no metrics endpoint.
type Options struct {
	Replicas    int  // 0: 1
	Aggregators int  // 0: 1
	Metrics     bool // serve the cluster's metrics on a loopback port
}

// Start starts a cluster in t's temporary directory and stops it when the
// test ends.
func Start(t testing.TB, o Options) *cluster.Cluster {
	t.Helper()
	c := cluster.Config{Dir: filepath.Join(t.TempDir(), "fleet"), Replicas: max(o.Replicas, 1), Aggregators: max(o.Aggregators, 1)}
	if o.Metrics {
		c.MetricsAddr = "127.0.0.1:0"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := cluster.Start(ctx, c)
	if err != nil {
		t.Fatalf("starting a test cluster: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Host is a small simulated host named name: cpus CPUs without the timing
// model, running progs for seconds of simulated time and publishing every
// 0.1 s, with the end-to-end acknowledgment on.
func Host(name string, cpus int, seconds float64, progs []simhost.Program) cluster.HostConfig {
	sim := config.Defaults().Sim
	sim.Hostname, sim.CPUs, sim.Timing = name, cpus, false
	return cluster.HostConfig{Sim: sim, Programs: progs, Seconds: seconds, FlushEvery: 0.1,
		Heartbeat: 200 * time.Millisecond, MaxBuffer: 16 << 20, Retain: transport.DefaultMaxRetainedBytes,
		Events: []string{"cycles", "imiss"}}
}

// Run adds hosts to cl, runs them to their end (cutting an epoch at cutAt
// of seconds; 0: none), and waits until every sample they generated is
// stored or counted as dropped. It returns the run, for the conservation
// check, and the epoch the cut opened.
func Run(t testing.TB, cl *cluster.Cluster, seconds, cutAt float64, hosts ...cluster.HostConfig) (cluster.Run, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, h := range hosts {
		if _, err := cl.AddHost(ctx, h); err != nil {
			t.Fatalf("host %s: %v", h.Sim.Hostname, err)
		}
	}
	cut, err := cl.Collect(ctx, seconds, cutAt)
	if err != nil {
		t.Fatal(err)
	}
	run, err := cl.WaitStored(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return run, cut
}
