package node

import "sync"

// The daemon runs on its own goroutine, beside the simulated machine, and
// reaches the CPUs only by IPIs. Left to itself it would react whenever
// the Go scheduler ran it, so the simulated time at which each of its IPIs
// lands (and with it every later sample, the handler's modelled cycles,
// which buffers were full when) would depend on how busy the real machine
// was: two runs with the same seeds would differ, and a loaded machine
// would drop samples a quiet one keeps.
//
// The lockstep runs the daemon only while the host waits for it, at the
// host's sync points (Host.SetIPISync: for hwsim, the start of each round,
// before it takes queued IPIs). The host side never wakes the daemon
// directly: a buffer-full wake-up or a flush request is noted, and an IPI
// that ran notes its completion. At a sync point the host hands the daemon
// what was noted (completions first: a daemon waiting for an IPI cannot
// take a new request) and waits until the daemon blocks again, waiting
// for its next IPI or for work. So the daemon sees the host's state only
// at sync points, its IPIs are queued before the round that runs them, and
// whether two wake-ups merge depends on simulated time alone.
//
// Epoch cuts come from the cluster in real time: a cut's drain starts
// whenever the daemon takes the request, not at a fixed simulated time.
// The lockstep still holds its IPIs' completions to sync points, and
// cannot deadlock with it.
type lockstep struct {
	mu   sync.Mutex
	cond *sync.Cond
	// Noted by the host side, handed over at the next sync point.
	wake, flush bool
	acks        []chan struct{} // completed IPIs whose daemon waits
	// busy: the daemon is running (not blocked on an IPI or idle).
	busy bool
	// inIPI: the daemon waits for an IPI that has not run yet.
	inIPI    bool
	stopping bool // Finish: hand over no new work
	dead     bool // the daemon has returned
	kick     chan request
}

// request is work a sync point hands the daemon.
type request uint8

const (
	drainBuffersReq request = iota + 1 // a buffer filled
	drainAllReq                        // periodic or commanded full drain
)

func newLockstep() *lockstep {
	l := &lockstep{kick: make(chan request, 1)}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// noteWake and noteFlush record work for the next sync point; safe from
// any goroutine.
func (l *lockstep) noteWake() {
	l.mu.Lock()
	l.wake = true
	l.mu.Unlock()
}

func (l *lockstep) noteFlush() {
	l.mu.Lock()
	l.flush = true
	l.mu.Unlock()
}

// completed records, on the host, that the IPI whose daemon waits on ack
// has run; the daemon continues at the next sync point.
func (l *lockstep) completed(ack chan struct{}) {
	l.mu.Lock()
	l.acks = append(l.acks, ack)
	l.mu.Unlock()
}

// sync is the host's sync point: it hands the daemon what was noted and
// waits until it blocks again.
func (l *lockstep) sync() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for l.busy && !l.dead {
			l.cond.Wait()
		}
		switch {
		case l.dead:
			return
		case len(l.acks) > 0:
			for _, ack := range l.acks {
				close(ack)
			}
			l.acks, l.inIPI, l.busy = l.acks[:0], false, true
		case l.inIPI || l.stopping || !(l.wake || l.flush):
			return
		default:
			r := drainBuffersReq
			if l.flush {
				r = drainAllReq // which takes the full buffers too
			}
			select {
			case l.kick <- r:
				l.wake, l.flush, l.busy = false, false, true
			default:
				// An earlier request is still queued (the daemon was busy
				// with a cut when it was handed over): it takes that one
				// first; this one stays noted.
				return
			}
		}
	}
}

// start marks the daemon running a request it took itself (an epoch cut).
func (l *lockstep) start() {
	l.mu.Lock()
	l.busy = true
	l.mu.Unlock()
}

// waitIPI marks the daemon blocked on an IPI it has queued.
func (l *lockstep) waitIPI() {
	l.mu.Lock()
	l.busy, l.inIPI = false, true
	l.cond.Broadcast()
	l.mu.Unlock()
}

// idle marks the daemon blocked waiting for work.
func (l *lockstep) idle() {
	l.mu.Lock()
	l.busy = false
	l.cond.Broadcast()
	l.mu.Unlock()
}

// exit records that the daemon has returned.
func (l *lockstep) exit() {
	l.mu.Lock()
	l.dead, l.busy = true, false
	l.cond.Broadcast()
	l.mu.Unlock()
}

// stop makes sync points hand over no new work: the final drain takes
// what is left.
func (l *lockstep) stop() {
	l.mu.Lock()
	l.stopping = true
	l.mu.Unlock()
}

// awaitHost waits until the daemon waits for an IPI (true: the host must
// run to deliver it), or has returned (false).
func (l *lockstep) awaitHost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.dead && (l.busy || !l.inIPI) {
		l.cond.Wait()
	}
	return !l.dead
}
