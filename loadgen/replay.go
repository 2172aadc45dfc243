package loadgen

import (
	"fmt"

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
type Agent struct {
	rec   *Recording
	host  string
	epoch uint64
	// Per CPU, the recording's last batch: its seq and accounting.
	lastSeq, lastDelivered, lastAccounted map[uint16]uint64
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
	a := &Agent{rec: rec, host: host, epoch: epoch, lastSeq: map[uint16]uint64{},
		lastDelivered: map[uint16]uint64{}, lastAccounted: map[uint16]uint64{}}
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
// or false if the item is an image record.
func (a *Agent) Batch(loop uint64, i int, b *wire.Batch) bool {
	src := a.rec.Items[i].Batch
	if src == nil {
		return false
	}
	*b = *src
	b.Host = a.host
	b.Epoch = a.epoch
	b.Seq = src.Seq + loop*a.lastSeq[src.CPU]
	shift := loop * a.rec.Header.Cycles
	b.Start, b.End = src.Start+shift, src.End+shift
	if src.Delivered != 0 || src.Accounted != 0 {
		b.Delivered = src.Delivered + loop*a.lastDelivered[src.CPU]
		b.Accounted = src.Accounted + loop*a.lastAccounted[src.CPU]
	}
	return true
}

// Image returns item i if it is an image record.
func (a *Agent) Image(i int) *wire.ImageRecord { return a.rec.Items[i].Image }
