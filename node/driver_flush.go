package node

// The flush protocol (sec. 4.2.3): how the daemon gets samples out of a
// CPU's table and overflow buffers without the interrupt handler ever
// taking a lock, executing a memory barrier or an atomic instruction.
//
// Each CPU's data structures are changed only on that CPU, by the counter
// interrupt handler and by IPI handlers, which the simulator runs on the
// same goroutine and atomically with respect to each other (as DCPI's IPI
// handler raised its priority level above the counter interrupt's). The
// daemon touches a structure only while the CPU has handed it over, and
// every hand-over is an IPI:
//
//   - daemon → CPU: Host.SendIPI orders what the daemon did before it
//     before the handler (hwsim.Machine.SendIPI, behind simhost's Host,
//     queues the IPI under a mutex that the simulation goroutine takes
//     before it runs the handler).
//   - CPU → daemon: the IPI function, after calling the driver, notes its
//     completion; the host hands it to the daemon (closes the channel the
//     daemon waits on) at its next sync point (lockstep.go), so whatever
//     the CPU did up to then happens before the daemon continues.
//
// The rule for the daemon: after sending an IPI to a driver, wait for its
// completion signal before calling that driver's daemon-side methods
// (DrainTable, TakeFull), and call them from one goroutine. Then:
//
//	full drain (periodic; sec. 4.3.1)          buffer full (Sample said so; the caller woke the daemon)
//	IPI: BeginFlush()            ; wait        IPI: HandOff(false) ; wait
//	DrainTable(dst)                            TakeFull(dst) until false
//	IPI: EndFlush(); HandOff(true) ; wait      IPI: Release()      ; wait
//	TakeFull(dst) until false
//	IPI: Release()               ; wait
//
// Between BeginFlush and EndFlush the handler writes samples straight into
// the overflow buffer, so the table is the daemon's alone; HandOff(true)
// seals the partly filled active buffer, so a full drain sees every
// sample taken up to the EndFlush. Release returns the copied buffers; a
// driver whose two buffers are both with the daemon keeps counting hits in
// its table but drops the samples of misses (Stats.Dropped) until then.
//
// Several driver calls may share one IPI (EndFlush and HandOff above); the
// IPI function's cost in cycles is the daemon's to choose, as DCPI's IPIs
// were expensive (sec. 4.2.3) but rare.
//
// Wake-ups may be lost or merged: HandOff publishes every buffer that is
// complete, whichever sample completed it, so a daemon that also polls
// (say, every simulated second) never leaves a buffer behind for long.

// BeginFlush (CPU side, in an IPI handler) switches the handler to its
// flushing version, which leaves the table alone, so that the daemon may
// copy and clear it with DrainTable. It is idempotent.
func (d *Driver) BeginFlush() {
	d.handle, d.flushing = (*Driver).sampleFlushing, true
	if d.stk != nil {
		d.stk.flushing = true
	}
	if d.me != nil {
		d.me.flushing = true
	}
}

// EndFlush (CPU side, in an IPI handler) switches back to the table
// handler. The daemon must not call DrainTable after sending it.
func (d *Driver) EndFlush() {
	d.handle, d.flushing = d.normal, false
	if d.stk != nil {
		d.stk.flushing = false
	}
	if d.me != nil {
		d.me.flushing = false
	}
}

// DrainTable (daemon side) appends every entry of the table to dst and
// clears the table. It is valid only after the daemon has seen BeginFlush
// complete and before it sends EndFlush; elsewhere it panics, as it would
// race with the interrupt handler.
func (d *Driver) DrainTable(dst []Entry) []Entry {
	if !d.flushing {
		panic("node: DrainTable outside BeginFlush/EndFlush")
	}
	dst, n := d.tab.drain(dst)
	d.drained += n
	return dst
}

// HandOff (CPU side, in an IPI handler) publishes every complete overflow
// buffer to the daemon, oldest first; with seal it first completes the
// active buffer if it holds any entry. It returns how many buffers the
// daemon may take with TakeFull once it has seen the IPI complete. The
// stack buffers (TakeFullStacks) are handed off likewise.
func (d *Driver) HandOff(seal bool) int {
	if d.stk != nil {
		d.stk.out.handOff(seal)
	}
	if d.me != nil {
		d.me.out.handOff(seal)
	}
	return d.out.handOff(seal)
}

// TakeFull (daemon side) appends the oldest published buffer not taken yet
// to dst and reports whether there was one. A taken buffer stays the
// daemon's until the CPU runs Release, so TakeFull copies and the daemon
// processes its copy at leisure.
func (d *Driver) TakeFull(dst []Entry) ([]Entry, bool) {
	buf, ok := d.out.takeFull()
	for _, s := range buf {
		dst = append(dst, s.entry())
		d.drained += uint64(s.count())
	}
	return dst, ok
}

// Release (CPU side, in an IPI handler) returns every buffer the daemon
// has taken to the driver, and reinstates an active buffer if the driver
// had none, and does the same for the stack buffers. It returns how many
// flat buffers it freed.
func (d *Driver) Release() int {
	if d.stk != nil {
		d.stk.out.release()
	}
	if d.me != nil {
		d.me.out.release()
	}
	return d.out.release()
}

// Pending (CPU side, or when the CPU is stopped) counts what the driver
// holds that the daemon has not taken: entries and samples in the table,
// and in overflow buffers.
func (d *Driver) Pending() (tableEntries int, tableSamples uint64, bufferEntries int, bufferSamples uint64) {
	tableEntries, tableSamples = d.tab.contents()
	d.out.pending(func(ss []slot) {
		for _, s := range ss {
			bufferEntries++
			bufferSamples += uint64(s.count())
		}
	})
	return
}

// Delivered (daemon side) is the number of samples DrainTable and
// TakeFull have handed to the daemon. With the CPU stopped and
// synchronized, Stats().Samples == Delivered() + Pending's table and
// buffer samples + Stats().Dropped.
func (d *Driver) Delivered() uint64 { return d.drained }
