package loadgen

import (
	"fmt"
	"sync"

	"dcpi/wire"
)

// Agent is one replayed host: the recording's items under another host
// name, played in a loop. Loop k shifts every batch's sequence numbers by
// k times the recording's last of its CPU, its cycles by k times the
// recording's length, and its cumulative accounting (Delivered,
// Accounted) by k times the recording's last, so that the streams of
// every (host, CPU) stay contiguous from 1 and the accounting grows as
// a long run's would. Every loop republishes the images (the cluster's
// bucket is content-addressed: the first host's upload stores them, the
// others find them there).
//
// An agent follows the fleet's epochs as a node does, at batch
// granularity: after Cut, its batches carry the new epoch, and Cut
// returns the last Seq per stream it stamped with the old one, for the
// acknowledgement. (A node drains its driver at the cut and publishes
// the part-window into the old epoch; a recorded window cannot be split,
// so the agent's window under way at the cut lands whole in the new one.)
type Agent struct {
	rec  *Recording
	host string
	// Per CPU, the recording's last batch: its seq and accounting.
	lastSeq, lastDelivered, lastAccounted map[uint16]uint64

	// mu guards the epoch: Batch runs in the agent's publishing
	// goroutine, Cut in its heartbeat's.
	mu    sync.Mutex
	epoch uint64
	// inEpoch is, per stream (CPU i at i, the daemon's AllCPUs stream
	// last), the last Seq stamped with epoch; 0: none.
	inEpoch []uint64
}

// EpochClose is an agent's cut: it left Epoch having stamped it on the
// batches up to LastSeq (per stream, as Agent.inEpoch), and went to
// Next; the epochs in between it skipped (it heard of no cut to them)
// and published nothing into.
type EpochClose struct {
	Epoch, Next uint64
	LastSeq     []uint64
}

// NewAgent returns the agent of host, publishing in epoch (the cluster's
// open epoch).
func NewAgent(rec *Recording, host string, epoch uint64) (*Agent, error) {
	if err := wire.CheckHost(host); err != nil {
		return nil, fmt.Errorf("loadgen: agent: %w", err)
	}
	if epoch == 0 {
		return nil, fmt.Errorf("loadgen: agent %s: epoch 0", host)
	}
	a := &Agent{rec: rec, host: host, epoch: epoch, inEpoch: make([]uint64, rec.Header.CPUs+1),
		lastSeq: map[uint16]uint64{}, lastDelivered: map[uint16]uint64{}, lastAccounted: map[uint16]uint64{}}
	for _, it := range rec.Items {
		if b := it.Batch; b != nil {
			a.lastSeq[b.CPU] = b.Seq
			a.lastDelivered[b.CPU] = b.Delivered
			a.lastAccounted[b.CPU] = b.Accounted
		}
	}
	return a, nil
}

// Len is the number of items of one loop.
func (a *Agent) Len() int { return len(a.rec.Items) }

// At is when item i of loop k is due, in simulated cycles from the start.
func (a *Agent) At(loop uint64, i int) uint64 {
	return loop*a.rec.Header.Cycles + a.rec.Items[i].At
}

// Batch returns item i of loop k rewritten as this agent's into b (which
// it overwrites; the entries are shared with the recording, read-only),
// in the agent's current epoch, or false if the item is an image record.
// Each (loop, i) must be asked for once, in order: the agent notes the
// batch as the last of its stream in the epoch.
func (a *Agent) Batch(loop uint64, i int, b *wire.Batch) bool {
	src := a.rec.Items[i].Batch
	if src == nil {
		return false
	}
	*b = *src
	b.Host = a.host
	b.Seq = src.Seq + loop*a.lastSeq[src.CPU]
	a.mu.Lock()
	b.Epoch = a.epoch
	a.inEpoch[a.stream(src.CPU)] = b.Seq
	a.mu.Unlock()
	shift := loop * a.rec.Header.Cycles
	b.Start, b.End = src.Start+shift, src.End+shift
	if src.Delivered != 0 || src.Accounted != 0 {
		b.Delivered = src.Delivered + loop*a.lastDelivered[src.CPU]
		b.Accounted = src.Accounted + loop*a.lastAccounted[src.CPU]
	}
	return true
}

// stream is the index of cpu's stream in inEpoch and acknowledgements.
func (a *Agent) stream(cpu uint16) int {
	if cpu == wire.AllCPUs {
		return a.rec.Header.CPUs
	}
	return int(cpu)
}

// Epoch is the epoch the agent's next batch will carry.
func (a *Agent) Epoch() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.epoch
}

// Cut moves the agent to the fleet's open epoch next, if it is later than
// the agent's, and returns what to acknowledge; false if the agent is
// there already.
func (a *Agent) Cut(next uint64) (EpochClose, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if next <= a.epoch {
		return EpochClose{}, false
	}
	c := EpochClose{Epoch: a.epoch, Next: next, LastSeq: a.inEpoch}
	a.epoch, a.inEpoch = next, make([]uint64, len(a.inEpoch))
	return c, true
}

// Acks are the acknowledgements c stands for, in order: its epoch with
// its LastSeq, then each skipped epoch with none.
func (c EpochClose) Acks() []EpochAck {
	var out []EpochAck
	for e := c.Epoch; e < c.Next; e++ {
		last := c.LastSeq
		if e != c.Epoch {
			last = make([]uint64, len(c.LastSeq))
		}
		out = append(out, EpochAck{Epoch: e, LastSeq: last})
	}
	return out
}

// EpochAck is one acknowledgement: the agent published into Epoch the
// batches up to LastSeq per stream.
type EpochAck struct {
	Epoch   uint64
	LastSeq []uint64
}

// Image returns item i if it is an image record.
func (a *Agent) Image(i int) *wire.ImageRecord { return a.rec.Items[i].Image }
