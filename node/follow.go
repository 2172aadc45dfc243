package node

import (
	"context"
	"errors"
	"time"
)

// Control is the node's line to the coordinator: membership, liveness and
// the epoch the fleet is in.
type Control interface {
	Register(ctx context.Context, host string, labels map[string]string, cpus int) error
	// Heartbeat reports the node alive and returns the fleet's current
	// (open) epoch.
	Heartbeat(ctx context.Context, host string) (epoch uint64, err error)
	// AckEpoch tells the coordinator that the node has left epoch and
	// published into it the batches up to lastSeq, per CPU.
	AckEpoch(ctx context.Context, host string, epoch uint64, lastSeq []uint64) error
}

// FollowStats count what Follow did.
type FollowStats struct {
	Heartbeats, Failures, Cuts uint64
}

// Follow keeps the node in the fleet's epoch until ctx ends: it registers,
// heartbeats every interval, and when the fleet has moved to a later
// epoch (DCPI sec. 4.3.3, here cut fleet-wide through the coordinator) it
// cuts the node's own epoch and acknowledges the one it left. A node
// that could not reach the coordinator keeps sampling into the epoch it
// is in, and when it returns cuts once and acknowledges every epoch it
// missed (those in between with no batches). Once Finish has returned, the
// node has published everything it will, and Follow goes on (until ctx
// ends) acknowledging any later cut at once, so a stopped node never
// holds up the sealing of an epoch.
func (n *Node) Follow(ctx context.Context, ctl Control, labels map[string]string, interval time.Duration, logf func(string, ...any)) FollowStats {
	var st FollowStats
	registered := false
	var pending *EpochClose // an acknowledgement not yet delivered
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if !registered {
			if err := ctl.Register(ctx, n.cfg.Host, labels, len(n.drivers)); err == nil {
				registered = true
			} else if ctx.Err() == nil {
				logf("node %s: register: %v", n.cfg.Host, err)
			}
		}
		if registered {
			n.followOnce(ctx, ctl, &st, &pending, logf)
		}
		select {
		case <-ctx.Done():
			return st
		case <-t.C:
		}
	}
}

func (n *Node) followOnce(ctx context.Context, ctl Control, st *FollowStats, pending **EpochClose, logf func(string, ...any)) {
	if p := *pending; p != nil {
		if err := n.ackThrough(ctx, ctl, p); err != nil {
			st.Failures++
			logf("node %s: ack epoch %d: %v", n.cfg.Host, p.Epoch, err)
			return
		}
		*pending = nil
	}
	fleet, err := ctl.Heartbeat(ctx, n.cfg.Host)
	if err != nil {
		st.Failures++
		if ctx.Err() == nil {
			logf("node %s: heartbeat: %v (sampling on in epoch %d)", n.cfg.Host, err, n.Epoch())
		}
		return
	}
	st.Heartbeats++
	if fleet <= n.Epoch() {
		return
	}
	var c EpochClose
	select {
	case <-n.runDone:
		c, err = n.closeStopped(fleet)
	default:
		c, err = n.CutEpoch(ctx, fleet)
		if errors.Is(err, ErrNotRunning) {
			<-n.runDone // the final drain is under way; then nothing is left
			c, err = n.closeStopped(fleet)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			logf("node %s: cut to epoch %d: %v", n.cfg.Host, fleet, err)
		}
		return
	}
	st.Cuts++
	*pending = &c
	if err := n.ackThrough(ctx, ctl, &c); err != nil {
		st.Failures++
		logf("node %s: ack epoch %d: %v (will retry)", n.cfg.Host, c.Epoch, err)
		return
	}
	*pending = nil
}

// ackThrough acknowledges c's epoch and every epoch the node skipped
// before c.Next (in which it published nothing).
func (n *Node) ackThrough(ctx context.Context, ctl Control, c *EpochClose) error {
	for e := c.Epoch; e < c.Next; e++ {
		last := c.LastSeq
		if e != c.Epoch {
			last = make([]uint64, len(c.LastSeq))
		}
		if err := ctl.AckEpoch(ctx, n.cfg.Host, e, last); err != nil {
			c.Epoch = e // resume here
			return err
		}
	}
	return nil
}
