package main

// The partition tests: the failure test's cluster (failure_test.go: a
// dcpi nats-server, three coordinator replicas, two aggregators, two
// sampling nodes, each a real process) with every role in a network
// namespace of its own on one bridge (partition_net_test.go), and the
// network cut between roles while they ingest. Run them, as root, with
//
//	DCPI_PARTITION_TEST=1 go test -run TestPartition -v -timeout 30m ./cmd/dcpi/
//
// Each scenario fires on ingest progress as the failure tests' faults do
// (fault, waitIngest), and ends with the failure test's checks (verify):
// exact conservation per host, the stream drained, every epoch but the
// last sealed, and the three replicas' databases identical once stopped.
// Without DCPI_PARTITION_TEST=1 they skip; with it but without root or
// the ip and nft commands they fail saying so.

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/internal/testrand"
)

// nodeCut is how long TestPartitionNode cuts a node off: several times
// the coordinator's heartbeat timeout (config's default
// coordinator.heartbeat_timeout, the roles' setting here), past which the
// node is no longer live and an epoch seals without it. No JetStream
// state of a node expires sooner: a node's heartbeat is a core NATS
// request to the leader, which keeps only when it last came; the batch
// stream has no MaxAge (work-queue retention: a batch stays until an
// aggregator acks it); and JetStream's duplicate window
// (transport.DuplicateWindow, 10 minutes) bounds only how late a
// republished batch is still recognised, while a node's queued batches
// were never received and need no deduplication.
var nodeCut = 7 * config.Defaults().Coordinator.HeartbeatTimeout

// startPartitionCluster starts the failure test's cluster with every role
// in its own network namespace.
func startPartitionCluster(t *testing.T, name string) *failureCluster {
	if os.Getenv("DCPI_PARTITION_TEST") != "1" {
		t.Skip("the partition tests of real processes in network namespaces run only with DCPI_PARTITION_TEST=1, as root: " +
			"DCPI_PARTITION_TEST=1 go test -run " + name + " -v -timeout 15m ./cmd/dcpi/")
	}
	if why := partitionPrereqs(); why != "" {
		t.Fatalf("DCPI_PARTITION_TEST=1 asks for the partition tests, but %s", why)
	}
	lab := newNetLab(t) // before the cluster: its cleanup then runs after the processes have stopped
	c := newFailureTest(t)
	c.lab = lab
	// Registered after the cluster's cleanup, so run before it: a test
	// that fails during a cut heals it first, so that the roles can stop
	// cleanly (a node drains to NATS) and leave their logs whole.
	t.Cleanup(lab.healQuietly)
	c.rng = testrand.New(t)
	c.startRoles()
	return c
}

// TestPartitionReplica cuts a follower replica off from every other role
// (the other replicas and NATS) while the cluster ingests and cuts an
// epoch, then heals it: the majority keeps committing, and the healed
// replica catches up to a database identical to the others'.
func TestPartitionReplica(t *testing.T) {
	c := startPartitionCluster(t, "TestPartitionReplica")
	c.fault("cut a follower replica off", func() {
		l, err := c.waitLeader(nil, 30*time.Second)
		c.must(err)
		var f *proc
		for _, p := range c.coords {
			if p != l {
				f = p
				break
			}
		}
		c.lab.isolate(f.name)
		c.logf("%s cut off from %s (%s leads)", f.name, strings.Join(c.lab.others(f.name), ", "), l.name)
		held := c.waitIngest(faultStep)
		c.logf("the majority committed while %s was cut off: the cluster holds %d samples", f.name, held)
		c.must(c.cutEpochAcross())
		c.waitIngest(faultStep)
		c.lab.heal()
		c.logf("healed: %s reachable again", f.name)
	})
	c.stopNodes()
	c.verify(nil)
	c.checkUnderIngest()
}

// TestPartitionNode cuts a node off from the cluster for nodeCut, several
// heartbeat timeouts: while it is away an epoch is cut and must seal
// without it (a node that is not live is not waited for), and the other
// node's samples keep arriving; healed, it publishes what it queued
// (counting what its bounded queue could not hold as dropped), its late
// acknowledgement is recorded, and every sample is accounted for.
func TestPartitionNode(t *testing.T) {
	c := startPartitionCluster(t, "TestPartitionNode")
	c.fault("cut a node off for longer than its heartbeat timeout", func() {
		n := c.nodes[1]
		c.lab.isolate(n.name)
		at := time.Now()
		c.logf("%s cut off for %v (the heartbeat timeout is %v)", n.name, nodeCut, config.Defaults().Coordinator.HeartbeatTimeout)
		before, err := c.totals(n.name)
		c.must(err)
		open, err := c.cutEpoch()
		c.must(err)
		c.must(c.waitSealed(nodeCut))
		c.logf("the epoch sealed without %s's acknowledgement, %.1f s into the cut", n.name, time.Since(at).Seconds())
		held := c.waitIngest(faultStep / 4)
		c.logf("the cluster holds %d samples: the other node's keep arriving", held)
		time.Sleep(time.Until(at.Add(nodeCut)))
		if !n.running() {
			c.t.Fatalf("%s exited while cut off: %s", n.name, lastWords(n.currentLog()))
		}
		c.lab.heal()
		c.logf("healed after %.1f s: %s reachable again", time.Since(at).Seconds(), n.name)
		late, err := c.waitAck(open-1, n.name, time.Minute)
		c.must(err)
		if !late {
			c.t.Errorf("%s's acknowledgement of epoch %d, which sealed while it was cut off, is not recorded as late", n.name, open-1)
		}
		c.logf("%s acknowledged epoch %d late", n.name, open-1)
		c.must(c.waitHostIngest(n.name, before.Total+faultStep/4, time.Minute))
		c.logf("%s's samples arrive again", n.name)
	})
	c.stopNodes()
	c.verify(nil)
	c.checkUnderIngest()
}

// TestPartitionLeader isolates the Raft leader with a minority — itself
// and one node — from the other two replicas, NATS, the aggregators and
// the other node. The majority elects a new leader and keeps committing;
// the old leader, unable to reach a quorum, steps down; once healed it
// follows the new leader. No acknowledged write is lost: conservation is
// exact, and the replicas are identical.
func TestPartitionLeader(t *testing.T) {
	c := startPartitionCluster(t, "TestPartitionLeader")
	c.fault("isolate the leader with a minority", func() {
		old, err := c.waitLeader(nil, 30*time.Second)
		c.must(err)
		stepDowns := strings.Count(old.currentLog(), "lost leadership")
		minority := []string{old.name, c.nodes[1].name}
		majority := c.lab.others(minority...)
		c.lab.cut(minority, majority)
		c.logf("partitioned %s | %s", strings.Join(minority, " "), strings.Join(majority, " "))
		nl, err := c.waitLeader(old, time.Minute)
		c.must(err)
		c.logf("%s leads the majority", nl.name)
		c.must(c.waitStepDown(old, stepDowns, time.Minute))
		c.logf("%s stepped down", old.name)
		leads := strings.Count(old.currentLog(), "is the leader")
		held := c.waitIngest(faultStep)
		c.logf("the majority committed: the cluster holds %d samples", held)
		c.must(c.cutEpochAcross()) // sealed without the node on the minority side, which acknowledges it late
		c.waitIngest(faultStep / 4)
		if strings.Count(old.currentLog(), "is the leader") != leads {
			c.t.Errorf("%s became leader again on the minority side of the partition", old.name)
		}
		c.lab.heal()
		c.logf("healed")
		l, err := c.waitLeader(nil, time.Minute)
		c.must(err)
		c.logf("%s leads after healing; %s follows (identical replicas, checked at the end, say it caught up)", l.name, old.name)
	})
	c.stopNodes()
	c.verify(nil)
	c.checkUnderIngest()
}

// waitStepDown waits for replica p to log losing leadership once more
// than the before times it had.
func (c *failureCluster) waitStepDown(p *proc, before int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for strings.Count(p.currentLog(), "lost leadership") <= before {
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s cut off from the majority did not step down within %v", p.name, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// waitAck waits for host's acknowledgement of epoch and says whether it
// was recorded as late.
func (c *failureCluster) waitAck(epoch uint64, host string, timeout time.Duration) (late bool, err error) {
	deadline := time.Now().Add(timeout)
	for {
		out, err := c.run(time.Minute, "epoch", "list", "--nats", c.url, "--json")
		var eps []coordinator.EpochJSON // what dcpi epoch list --json prints
		if err == nil {
			err = json.Unmarshal([]byte(out), &eps)
		}
		for _, e := range eps {
			if e.Number != epoch {
				continue
			}
			for _, a := range e.Acks {
				if a.Host == host {
					return a.Late, nil
				}
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return false, fmt.Errorf("epochs: %w", err)
			}
			return false, fmt.Errorf("no acknowledgement of epoch %d from %s within %v", epoch, host, timeout)
		}
		time.Sleep(time.Second)
	}
}

// waitHostIngest waits until the cluster holds at least want samples of
// host (stored, unknown, dropped).
func (c *failureCluster) waitHostIngest(host string, want uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		tot, err := c.totals(host)
		if err == nil && tot.Total >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster holds %d samples of %s after %v, want %d (last error: %v)", tot.Total, host, timeout, want, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// cutEpochAcross cuts an epoch while a replica is cut off, asking again
// while the request goes unanswered. A replica cut off from NATS keeps
// its queue subscriptions on the server (the leader's subjects, if it
// led; every replica's query subjects) until the server finds its
// connection dead: meanwhile the server hands such a ghost a share of the
// requests, which no one answers, and dcpi epoch cut says the outcome is
// unknown. Asking again is safe here: a request the ghost was handed never
// reached it (the partition drops it), so it cut nothing. It logs how
// long the ghost lasted.
func (c *failureCluster) cutEpochAcross() error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		_, err := c.cutEpoch()
		if err == nil {
			if attempt > 1 {
				c.logf("the epoch cut was answered at attempt %d, %.1f s after the first (requests the server handed the cut-off replica's stale subscription went unanswered)", attempt, time.Since(start).Seconds())
			}
			return nil
		}
		if !strings.Contains(err.Error(), "no reply") || time.Since(start) > 90*time.Second {
			return err
		}
		c.logf("attempt %d: %v", attempt, err)
	}
}
