package node

// Per-thread profiles (Config.PerThread): the images kept per process
// keep each thread's samples apart. The driver needs nothing new: its
// process key is whatever the handler gives it, and a per-thread node
// gives it the thread's incarnation (Sample.ThreadIncarnation), which,
// like a process's, is never reused and is the process's own for its
// first thread, so a single-threaded process is counted as before. The
// image maps resolve a thread's incarnation through its process's
// (EventThread; ImageMaps.ResolveThread), the attributor puts the TID
// where the PID would go, and the process book publishes a record per
// thread naming its process (wire.ProcessThreadVersion), which is how
// the tools group a process's threads back into it.
//
// The choice is made once, when the node installs its handler: a node
// that is not per-thread runs Node.CounterInterrupt, which tests nothing
// for it.

// perThreadHandler is the interrupt handler of a per-thread node.
type perThreadHandler struct{ n *Node }

// CounterInterrupt counts s under its thread's incarnation; a host that
// does not tell threads apart gives none, and the sample is counted
// under its process's (its first thread's).
func (h perThreadHandler) CounterInterrupt(s Sample) uint64 {
	key := s.ThreadIncarnation
	if key == 0 {
		key = s.Incarnation
	}
	return h.n.interrupt(s, key)
}
