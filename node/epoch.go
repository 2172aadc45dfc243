package node

import (
	"context"
	"errors"
)

// ErrNotRunning is returned by CutEpoch when the node's daemon is not (or no
// longer) running.
var ErrNotRunning = errors.New("node: not running")

type cutRequest struct {
	next  uint64
	reply chan cutReply
}

type cutReply struct {
	closed EpochClose
	err    error
}

// EpochClose is what a node reports when it leaves an epoch: the epoch, and
// per CPU the sequence number of the last batch it published into it (0:
// none). Once the profile database has applied those batches, it holds
// every sample this node took in the epoch.
type EpochClose struct {
	Epoch   uint64
	LastSeq []uint64
	// Next is the epoch the node went on to (CutEpoch's argument).
	Next uint64
}

// CutEpoch ends the node's current epoch and starts next (DCPI sec. 4.3.3:
// epochs are non-overlapping intervals). The daemon drains every CPU's
// table and buffers by the IPI protocol into the closing epoch, publishes,
// and only then switches, so every sample is in exactly one epoch: those
// taken on a CPU before its flush IPI in the old one, those after in the
// new. It waits for the daemon; it is safe from any goroutine.
func (n *Node) CutEpoch(ctx context.Context, next uint64) (EpochClose, error) {
	req := cutRequest{next: next, reply: make(chan cutReply, 1)}
	select {
	case n.cutReq <- req:
	case <-n.daemonDone:
		return EpochClose{}, ErrNotRunning
	case <-ctx.Done():
		return EpochClose{}, ctx.Err()
	}
	r := <-req.reply // the daemon always answers a request it took
	return r.closed, r.err
}

// Epoch returns the epoch the node publishes into; it is safe from any
// goroutine.
func (n *Node) Epoch() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.books.Epoch()
}

// cut runs on the daemon goroutine: it drains every CPU into the closing
// epoch, then cuts the books.
func (n *Node) cut(next uint64) (EpochClose, error) {
	n.mu.Lock()
	err := n.books.CheckCut(next)
	n.mu.Unlock()
	if err != nil {
		return EpochClose{}, err
	}
	if err := n.drainAll(true); err != nil {
		return EpochClose{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.books.Cut(next)
}

// closeStopped leaves the epoch of a node whose Finish has returned: its
// final drain published everything, so the epoch closes with the batches
// it has. A cut to an epoch not after the current one closes nothing.
func (n *Node) closeStopped(next uint64) (EpochClose, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.books.Cut(next)
}
