package main

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFailureStorm is TestFailures with a random schedule: stormFaults
// faults from the table below, chosen by the logged seed, each when the
// cluster has ingested another faultStep to faultStep+faultJitter samples
// (TestFailures' fault). Only one coordinator is down at a time, so the
// Raft group keeps its quorum; everything else may be down together. A
// node agent is killed at most twice. The checks afterwards are
// TestFailures'.
//
//	DCPI_FAILURE_TEST=1 go test -run TestFailureStorm -v -timeout 15m ./cmd/dcpi/
func TestFailureStorm(t *testing.T) {
	c := startFailureCluster(t, "TestFailureStorm")
	bad, err := badBatches(c.hosts[0])
	c.must(err)
	down := func() time.Duration {
		return 500*time.Millisecond + time.Duration(c.rng.Int64N(int64(2500*time.Millisecond)))
	}
	// At most maxNodeKills per host, so that the storm is not mostly
	// node restarts.
	const maxNodeKills = 2
	nodeToKill := func() *proc {
		var ns []*proc
		for _, n := range c.nodes {
			if c.nodeKills[n.name] < maxNodeKills {
				ns = append(ns, n)
			}
		}
		if len(ns) == 0 {
			c.logf("every node agent has been killed %d times: skipped", maxNodeKills)
			return nil
		}
		return ns[c.rng.IntN(len(ns))]
	}
	killCoord := func(p *proc) {
		c.must(p.kill())
		c.logf("killed %s", p.name)
		time.Sleep(down())
		c.restartCoordinator(p)
	}
	faults := []struct {
		name string
		do   func()
	}{
		{"SIGKILL the Raft leader", func() {
			if l := c.leader(); l != nil {
				killCoord(l)
			}
		}},
		{"SIGKILL a leader with an unreplicated log tail, restart it twice", c.killLeaderWithTail},
		{"SIGKILL a follower", func() {
			l := c.leader()
			var fs []*proc
			for _, p := range c.coords {
				if p != l {
					fs = append(fs, p)
				}
			}
			killCoord(fs[c.rng.IntN(len(fs))])
		}},
		{"SIGKILL an aggregator", func() {
			a := c.aggs[c.rng.IntN(len(c.aggs))]
			c.must(a.kill())
			c.logf("killed %s", a.name)
			time.Sleep(down())
			c.restartAggregator(a)
		}},
		{"SIGKILL both aggregators", func() {
			for _, a := range c.aggs {
				c.must(a.kill())
			}
			c.logf("killed every aggregator")
			time.Sleep(down())
			for _, a := range c.aggs {
				c.restartAggregator(a)
			}
		}},
		{"SIGKILL the NATS server", func() {
			c.must(c.nats.kill())
			c.logf("killed the NATS server")
			time.Sleep(down())
			c.startNATS()
			c.logf("restarted the NATS server")
		}},
		{"SIGKILL the NATS server and the Raft leader", func() {
			l := c.leader()
			c.must(c.nats.kill())
			if l != nil {
				c.must(l.kill())
			}
			c.logf("killed the NATS server and the leader %v", l)
			time.Sleep(down())
			c.startNATS()
			if l != nil {
				c.restartCoordinator(l)
			}
		}},
		{"SIGKILL an aggregator and the Raft leader", func() {
			l := c.leader()
			a := c.aggs[c.rng.IntN(len(c.aggs))]
			c.must(a.kill())
			if l != nil {
				c.must(l.kill())
			}
			c.logf("killed %s and the leader %v", a.name, l)
			time.Sleep(down())
			if l != nil {
				c.restartCoordinator(l)
			}
			c.restartAggregator(a)
		}},
		{"SIGKILL a node agent", func() {
			if n := nodeToKill(); n != nil {
				c.killAndRestartNode(n, down())
			}
		}},
		{"SIGKILL a node agent and the Raft leader", func() {
			// The successor starts while the leader is down: it reads
			// its predecessor's applied state from the next leader.
			n := nodeToKill()
			if n == nil {
				return
			}
			rp, ok := c.killNode(n)
			if !ok {
				return
			}
			l := c.leader()
			if l != nil {
				c.must(l.kill())
			}
			c.logf("killed the leader %v", l)
			time.Sleep(down())
			c.restartNode(n, rp)
			if l != nil {
				c.restartCoordinator(l)
			}
		}},
		{"SIGKILL a node agent and the NATS server", func() {
			n := nodeToKill()
			if n == nil {
				return
			}
			rp, ok := c.killNode(n)
			if !ok {
				return
			}
			c.must(c.nats.kill())
			c.logf("killed the NATS server")
			time.Sleep(down())
			c.startNATS()
			c.restartNode(n, rp)
		}},
		// Pauses (Jepsen's process pauses): a stopped process keeps its
		// sockets and its state, and wakes believing no time has passed.
		{"SIGSTOP the Raft leader, then SIGCONT", func() {
			if l := c.leader(); l != nil {
				c.pause(l, down())
			}
		}},
		{"SIGSTOP an aggregator, then SIGCONT", func() {
			c.pause(c.aggs[c.rng.IntN(len(c.aggs))], down())
		}},
		{"SIGSTOP the NATS server, then SIGCONT", func() {
			c.pause(c.nats, down())
		}},
		{"epoch cut", func() {
			// A cut during a leader change may fail with an unknown
			// outcome; the sealing check afterwards covers whatever
			// committed.
			if _, err := c.cutEpoch(); err != nil {
				c.logf("epoch cut failed: %v", err)
			}
		}},
		{"malformed and forged batches", func() {
			c.must(publishBad(c.url, bad))
			c.logf("published %d bad messages on %s's subjects", len(bad), forgerHost)
		}},
	}
	count := map[string]int{}
	for range stormFaults {
		f := faults[c.rng.IntN(len(faults))]
		if count["malformed and forged batches"] == 0 && len(count) >= 3 {
			f = faults[len(faults)-1] // publish them once, early
		}
		c.fault(f.name, f.do)
		count[f.name]++
	}
	var summary []string
	for name, n := range count {
		summary = append(summary, fmt.Sprintf("%s x%d", name, n))
	}
	slices.Sort(summary)
	c.logf("faults injected: %s", strings.Join(summary, ", "))
	if count["malformed and forged batches"] == 0 {
		c.must(publishBad(c.url, bad))
	}
	c.stopNodes()
	c.verify(bad)
	c.checkUnderIngest()
}

// pause stops p with SIGSTOP for d, then continues it: a paused leader
// must step down when it wakes to a newer term, an aggregator's unacked
// messages are redelivered to the other, and clients of a paused NATS
// server ride it out as a slow network.
func (c *failureCluster) pause(p *proc, d time.Duration) {
	c.must(p.signal(syscall.SIGSTOP))
	c.logf("paused %s for %v", p.name, d.Round(time.Millisecond))
	time.Sleep(d)
	c.must(p.signal(syscall.SIGCONT))
	c.logf("continued %s", p.name)
}

// stormFaults is how many faults TestFailureStorm injects: about as many
// as its clock-driven schedule used to fit into a run.
const stormFaults = 16

// String names a proc in log lines.
func (p *proc) String() string {
	if p == nil {
		return "(none)"
	}
	return p.name
}
