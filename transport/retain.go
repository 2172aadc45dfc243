package transport

import (
	"context"
	"slices"
	"time"
)

// AppliedFunc reports the applied Seq of each of the publisher's host's
// streams cpus (the host's CPUs, wire.AllCPUs for the daemon's own), in
// order: the coordinator's applied query (coordinator.Client.
// AppliedStreams), which storage keeps per (host, CPU) across epochs. It
// is asked about every retaining stream at once, so a host costs the
// coordinator one request per poll whatever its number of CPUs.
type AppliedFunc func(ctx context.Context, cpus []uint16) ([]uint64, error)

// Defaults of the end-to-end acknowledgment (PublisherConfig.Applied).
const (
	DefaultMaxRetainedBytes = 64 << 20
	defaultAppliedPoll      = time.Second
	defaultRepublishAfter   = 15 * time.Second
)

// AppliedPollFor is the applied poll that suits a daemon publishing a
// batch per stream every window: a stream's applied Seq moves at most
// once a window, so polling much oftener learns nothing, but a batch
// should be released (and a lost one noticed) well within
// republishAfter. A quarter of the window, between 1 s and a third of
// republishAfter (0: the default 15 s).
func AppliedPollFor(window, republishAfter time.Duration) time.Duration {
	if republishAfter <= 0 {
		republishAfter = defaultRepublishAfter
	}
	return min(max(window/4, defaultAppliedPoll), max(republishAfter/3, defaultAppliedPoll))
}

// retention holds the batches JetStream acknowledged but the coordinator
// has not applied yet, per stream (CPU) in Seq order, so that the ones a
// NATS server lost with its unsynced writes (a power loss) can be sent
// again. Like outQueue it has no I/O and no locks: the Publisher holds its
// mutex around every call.
//
// Rules:
//   - add takes a batch (or tombstone) the moment JetStream acknowledged
//     it; release drops every batch of a stream at or below its applied
//     Seq. A stream's batches are acknowledged in Seq order, so each
//     stream's list stays sorted.
//   - A stream whose applied Seq has not moved for republishAfter while it
//     holds batches is stalled: an aggregator is missing the next batch
//     (a Gap) or is not running. stalled returns its batches to be sent
//     again with their message IDs, and restarts its clock, doubling the
//     wait before the stream's next resend (up to maxRepublishBackoff
//     times republishAfter) until its applied Seq moves again: a cluster
//     that is only behind — minutes, at a fleet's peak — then costs a
//     few resends per batch, not one every republishAfter, while a batch
//     a server lost is still sent again within republishAfter. A resend the
//     stream still holds is a duplicate acknowledgement; one it lost is
//     stored again; one already applied is a Duplicate to the state
//     machine. None changes a count.
//   - bytes is bounded by max only indirectly: while bytes >= max the
//     sender publishes no new batch (full), so the queue fills and makes
//     tombstones, and the samples are counted as transport.buffer_full.
//     Nothing retained is ever dropped: it was published, and dropping it
//     would leave it unprotected, not lost.
type retention struct {
	max     int
	streams map[uint16]*retainedStream
	bytes   int
	batches int
	samples uint64
}

type retainedStream struct {
	items    []*item
	applied  uint64    // the last applied Seq read
	progress time.Time // when applied last moved, or the stream last got a batch while empty, or was last republished
	resends  int       // resends since applied last moved: the next waits republishAfter << resends
}

// maxRepublishBackoff caps a stalled stream's wait between resends at
// this many times republishAfter (16: 4 minutes at the default 15 s).
const maxRepublishBackoff = 16

func newRetention(max int) *retention {
	return &retention{max: max, streams: map[uint16]*retainedStream{}}
}

func (r *retention) full() bool { return r.bytes >= r.max }

// add retains it, which JetStream just acknowledged at now.
func (r *retention) add(it *item, now time.Time) {
	s := r.streams[it.hdr.CPU]
	if s == nil {
		s = &retainedStream{}
		r.streams[it.hdr.CPU] = s
	}
	if it.hdr.Seq <= s.applied {
		return // applied before its acknowledgement came back
	}
	if len(s.items) == 0 {
		s.progress = now
	}
	s.items = append(s.items, it)
	r.bytes += it.size()
	r.batches++
	r.samples += it.samples
}

// cpus returns the streams that hold batches, in order.
func (r *retention) cpus() []uint16 {
	var out []uint16
	for cpu, s := range r.streams {
		if len(s.items) > 0 {
			out = append(out, cpu)
		}
	}
	slices.Sort(out)
	return out
}

// release records that stream cpu is applied through applied at now and
// drops its batches up to it; it returns how many it dropped.
func (r *retention) release(cpu uint16, applied uint64, now time.Time) int {
	s := r.streams[cpu]
	if s == nil {
		return 0
	}
	if applied > s.applied {
		s.applied = applied
		s.progress = now
		s.resends = 0
	}
	n := 0
	for n < len(s.items) && s.items[n].hdr.Seq <= applied {
		it := s.items[n]
		r.bytes -= it.size()
		r.batches--
		r.samples -= it.samples
		it.released = true
		s.items[n] = nil
		n++
	}
	s.items = s.items[n:]
	if len(s.items) == 0 {
		delete(r.streams, cpu)
	}
	return n
}

// stalled returns, in stream and Seq order, the batches of every stream
// that has held batches without its applied Seq moving for after (times
// its backoff), and restarts those streams' clocks.
func (r *retention) stalled(now time.Time, after time.Duration) []*item {
	var out []*item
	for _, cpu := range r.cpus() {
		s := r.streams[cpu]
		if now.Sub(s.progress) < after*time.Duration(min(1<<s.resends, maxRepublishBackoff)) {
			continue
		}
		out = append(out, s.items...)
		s.progress = now
		s.resends = min(s.resends+1, 8)
	}
	return out
}
