package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"dcpi/conservation"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/transport"
)

// Baseline is what a continued fleet's database held before this run, and
// what the resumed hosts' predecessors lost (stored as drops during this
// run): the conservation lines count only what this run added.
type Baseline struct {
	Totals conservation.Totals
	// Lost is the samples the hosts' predecessors lost with them
	// (wire.DropCrashLost), generated before this run.
	Lost uint64
}

// waitLeader waits for the coordinator's Raft group to answer as a group
// (a heartbeat needs the leader); it gives up, naming the replicas, if no
// leader is elected in a minute.
func (cl *Cluster) waitLeader(ctx context.Context) error {
	const limit = time.Minute
	deadline := time.Now().Add(limit)
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cl.coord.Heartbeat(actx, "alpha0")
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Now().After(deadline):
			return fmt.Errorf("the coordinator's replicas (%s) elected no leader in %v; run with --verbose to see Raft's log", PeerList(cl.fleet.peers), limit)
		}
		cl.cfg.Progress.Printf("waiting for the coordinator's %d replicas to elect a leader", len(cl.fleet.peers))
	}
}

// PeerList shows replicas as ID=address,...
func PeerList(peers []coordinator.Peer) string {
	var s []string
	for _, p := range peers {
		s = append(s, p.ID+"="+p.Addr)
	}
	return strings.Join(s, ",")
}

// continueFleet prepares a run on an earlier run's fleet: it waits for the
// aggregators to store any batches an interrupted run left in the stream,
// then reads the totals this run starts from.
func (cl *Cluster) continueFleet(ctx context.Context) (Baseline, error) {
	stream, err := cl.js.Stream(ctx, transport.StreamName)
	if err != nil {
		return Baseline{}, err
	}
	const stall = 30 * time.Second
	last, lastChange := uint64(0), time.Now()
	for {
		info, err := stream.Info(ctx)
		if err != nil {
			return Baseline{}, err
		}
		n := info.State.Msgs
		if n == 0 {
			break
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > stall {
			return Baseline{}, fmt.Errorf("the stream holds %d batches of an earlier run that no aggregator stored in %v; run with --verbose to see why, or give a new --dir", n, stall)
		}
		cl.cfg.Progress.Printf("waiting for the aggregators to store %d batches an earlier run left in the stream", n)
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return Baseline{}, err
		}
	}
	tot, err := cl.settledTotals(ctx)
	return Baseline{Totals: tot}, err
}

// settledTotals reads the fleet's totals while nothing is being written:
// a replica still applying the log answers with less, so it reads until
// five answers in a row agree.
func (cl *Cluster) settledTotals(ctx context.Context) (conservation.Totals, error) {
	var prev conservation.Totals
	for agree := 0; agree < 5; {
		tot, err := cl.Totals(ctx)
		if err != nil {
			return prev, err
		}
		if totalsEqual(tot, prev) {
			agree++
		} else {
			agree, prev = 0, tot
		}
		time.Sleep(20 * time.Millisecond)
	}
	return prev, nil
}

// Totals is what the database holds of each view.
func (cl *Cluster) Totals(ctx context.Context) (conservation.Totals, error) {
	tot, err := cl.coord.Totals(ctx, storage.Query{}, true)
	if err != nil {
		return conservation.Totals{}, err
	}
	return conservation.Totals{Stored: tot.Samples + tot.Unknown, Drops: tot.Drops, Expired: tot.Expired.Samples,
		StackStored: tot.StackSamples, StackDrops: tot.StackDrops, StackExpired: tot.Expired.StackSamples,
		MeStored: tot.MeSamples + tot.MeUnknown, MeDrops: tot.MeDrops, MeExpired: tot.Expired.MeSamples}, nil
}

func totalsEqual(a, b conservation.Totals) bool {
	return a.Stored == b.Stored && a.StackStored == b.StackStored && a.MeStored == b.MeStored &&
		a.Expired == b.Expired && a.StackExpired == b.StackExpired && a.MeExpired == b.MeExpired &&
		mapsEqual(a.Drops, b.Drops) && mapsEqual(a.StackDrops, b.StackDrops) && mapsEqual(a.MeDrops, b.MeDrops)
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
