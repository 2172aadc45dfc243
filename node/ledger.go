package node

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"unsafe"

	"dcpi/wire"
)

// Ledger is the daemon's bookkeeping, a plain value in the shape of etcd's
// raft.Node: data in, records out, no goroutines, locks or I/O inside.
// What a CPU's driver handed over goes in (Drained); the batch to publish
// and the images seen for the first time come out. An epoch cut goes in
// (Cut); the report of the epoch left comes out. It owns, per CPU, the
// batch sequence numbers, the first one of the current epoch, the samples
// accounted for, the driver drops already reported and the losses carried
// from a crashed predecessor; the epoch; and the attribution of samples to
// images. The caller (Node's daemon) serializes calls.
type Ledger struct {
	host       string
	epoch      uint64
	seq        []uint64 // next batch sequence number per CPU
	epochFirst []uint64 // first seq published into the current epoch (0: none yet)
	accounted  []uint64 // samples and own drops published, this run
	lastCycle  []uint64 // end of the CPU's last batch
	dropsSeen  []uint64 // driver drops already reported
	// carried are the predecessor's losses, per CPU, reported once in
	// the CPU's first batch and then forgotten.
	carried []map[string]uint64
	att     *attributor
	stats   DaemonStats // batches, entries, samples, unknown, images

	// win is, per CPU, the publish window: the drains merged since the
	// CPU's last batch. publishEvery is the window's length in the
	// host's cycles (0: a batch per drain).
	win          []window
	publishEvery uint64

	// The driver's stack drops, ProfileMe drops and hardware ProfileMe
	// losses already booked, per CPU.
	stackDropsSeen          []uint64
	meDropsSeen, meLostSeen []uint64
	meUnmatchedSeen         []uint64
	meBooked                map[string]uint64

	// What the batches have reported, for the node's metrics: each
	// CPU's driver interrupts as of its last drain, and the drop
	// counters (flat and stack) summed over the batches published.
	delivered                []uint64
	dropsBooked, stackBooked map[string]uint64
}

// NewLedger starts the books of a host of cpus CPUs, attributing samples
// with im; cfg gives the host name, the epoch, the first sequence
// numbers, the carried losses and the per-process images.
func NewLedger(cfg Config, cpus int, im *ImageMaps) (*Ledger, error) {
	if cpus < 1 || cpus > wire.AllCPUs {
		return nil, fmt.Errorf("node: %d CPUs: want 1 to %d", cpus, wire.AllCPUs)
	}
	l := &Ledger{host: cfg.Host, epoch: cfg.Epoch, att: newAttributor(im, cfg.PerProcess),
		seq: make([]uint64, cpus), epochFirst: make([]uint64, cpus), accounted: make([]uint64, cpus),
		lastCycle: make([]uint64, cpus), dropsSeen: make([]uint64, cpus), carried: make([]map[string]uint64, cpus),
		stackDropsSeen: make([]uint64, cpus), delivered: make([]uint64, cpus),
		dropsBooked: map[string]uint64{}, stackBooked: map[string]uint64{},
		meDropsSeen: make([]uint64, cpus), meLostSeen: make([]uint64, cpus), meBooked: map[string]uint64{},
		meUnmatchedSeen: make([]uint64, cpus), win: make([]window, cpus), publishEvery: cfg.PublishEvery}
	if cfg.PerThread {
		l.att.perThread = true
		im.followThreads()
	}
	for cpu := range l.seq {
		l.seq[cpu] = 1
		if cpu < len(cfg.FirstSeq) && cfg.FirstSeq[cpu] > 0 {
			l.seq[cpu] = cfg.FirstSeq[cpu]
		}
		if cpu < len(cfg.Carried) && len(cfg.Carried[cpu]) > 0 {
			l.carried[cpu] = maps.Clone(cfg.Carried[cpu])
		}
	}
	return l, nil
}

// AddHostDrops counts k samples the host lost before they reached cpu's
// driver under reason (a Linux ring's lost records): the CPU's next
// batch reports them, as it reports a predecessor's carried losses.
func (l *Ledger) AddHostDrops(cpu int, reason string, k uint64) {
	if cpu < 0 || cpu >= len(l.carried) || k == 0 {
		return
	}
	if l.carried[cpu] == nil {
		l.carried[cpu] = map[string]uint64{}
	}
	l.carried[cpu][reason] += k
}

// Drained books what cpu's driver handed over in one drain: the entries,
// the driver's counters and the CPU's time, both read on the CPU when the
// drain ended. It returns the batch to publish (nil: nothing happened
// worth one) and the mappings of images seen for the first time, whose
// records must be published once, before the batch.
//
// The batch carries the driver drops since the last batch, the carried
// losses if this is the CPU's first, and the accounting a successor needs
// if this agent dies: Delivered (the driver's count of interrupts) and
// Accounted (samples published plus the driver's own drops, this run), so
// that what the CPU took is in a batch, dropped, or still in the driver.
func (l *Ledger) Drained(cpu int, entries []Entry, st DriverStats, now uint64) (*wire.Batch, []Mapping, error) {
	return l.DrainedStacks(cpu, entries, nil, st, now)
}

// DrainedStacks is Drained with the stacks the drain handed over too.
// They go into the same batch, attributed frame by frame, with the
// driver's stack drops since the last batch in StackDrops; such a batch
// is of wire.StackVersion, and one without stacks or stack drops keeps
// wire.Version, so a node with stacks off publishes what it always did.
func (l *Ledger) DrainedStacks(cpu int, entries []Entry, stacks []StackSample, st DriverStats, now uint64) (*wire.Batch, []Mapping, error) {
	return l.DrainedAll(cpu, entries, stacks, nil, st, now)
}

// DrainedAll is DrainedStacks with the ProfileMe samples the drain handed
// over too. They go into the same batch, attributed to (image, offset),
// with the samples no map covers in MeUnknown and, in MeDrops, the
// driver's ProfileMe drops (wire.DropMeOverflowFull) and the records the
// hardware lost (wire.DropMeHardwareFull) and the paired records refused
// for a missing partner (wire.DropMePairUnmatched) since the last batch,
// and the (PC, path-history) counts of the attributed samples (MeHist;
// MeHistDropped past the daemon's bound); such a batch is of
// wire.MeVersion. Per CPU, over the batches, the samples in
// Me, MeUnknown and MeDrops equal the records the hardware tagged and
// delivered or lost.
func (l *Ledger) DrainedAll(cpu int, entries []Entry, stacks []StackSample, me []MeSample, st DriverStats, now uint64) (*wire.Batch, []Mapping, error) {
	if cpu < 0 || cpu >= len(l.seq) {
		return nil, nil, fmt.Errorf("node: drained cpu %d of %d", cpu, len(l.seq))
	}
	if st.Dropped < l.dropsSeen[cpu] {
		return nil, nil, fmt.Errorf("node: cpu %d: driver drops went back from %d to %d", cpu, l.dropsSeen[cpu], st.Dropped)
	}
	if st.StackDropped < l.stackDropsSeen[cpu] {
		return nil, nil, fmt.Errorf("node: cpu %d: driver stack drops went back from %d to %d", cpu, l.stackDropsSeen[cpu], st.StackDropped)
	}
	if st.MeDropped < l.meDropsSeen[cpu] || st.MeLost < l.meLostSeen[cpu] || st.MePairUnmatched < l.meUnmatchedSeen[cpu] {
		return nil, nil, fmt.Errorf("node: cpu %d: ProfileMe drops went back from %d/%d/%d to %d/%d/%d", cpu,
			l.meDropsSeen[cpu], l.meLostSeen[cpu], l.meUnmatchedSeen[cpu], st.MeDropped, st.MeLost, st.MePairUnmatched)
	}
	w := &l.win[cpu]
	newImages, err := l.att.add(&w.flat, entries)
	if err != nil {
		return nil, nil, err
	}
	l.delivered[cpu] = st.Samples
	if newImages, err = l.att.addStacks(&w.stk, stacks, newImages); err != nil {
		return nil, nil, err
	}
	if newImages, err = l.att.addMe(&w.me, me, newImages); err != nil {
		return nil, nil, err
	}
	l.stats.Images += len(newImages)
	meDropped, meLost, meUnmatched := st.MeDropped-l.meDropsSeen[cpu], st.MeLost-l.meLostSeen[cpu], st.MePairUnmatched-l.meUnmatchedSeen[cpu]
	stackDropped, own := st.StackDropped-l.stackDropsSeen[cpu], st.Dropped-l.dropsSeen[cpu]
	w.add(&w.meDrops, wire.DropMeOverflowFull, meDropped)
	w.add(&w.meDrops, wire.DropMeHardwareFull, meLost)
	w.add(&w.meDrops, wire.DropMePairUnmatched, meUnmatched)
	w.add(&w.stackDrops, wire.DropStackOverflowFull, stackDropped)
	w.add(&w.drops, wire.DropOverflowFull, own)
	w.own += own
	l.meDropsSeen[cpu], l.meLostSeen[cpu], l.meUnmatchedSeen[cpu] = st.MeDropped, st.MeLost, st.MePairUnmatched
	l.stackDropsSeen[cpu], l.dropsSeen[cpu] = st.StackDropped, st.Dropped
	carried := l.carried[cpu]
	for name, d := range carried {
		w.add(&w.drops, name, d)
	}
	l.carried[cpu] = nil
	// A drain that brought nothing is in no batch, as without a window:
	// it leaves the window's end and Delivered where they were, and the
	// next batch's span covers it.
	if len(entries) > 0 || len(stacks) > 0 || len(me) > 0 || meDropped+meLost+meUnmatched+stackDropped+own > 0 || carried != nil {
		w.delivered, w.end = st.Samples, now
		w.drains++
	}
	if l.publishEvery > 0 && now-l.lastCycle[cpu] < l.publishEvery && now >= l.lastCycle[cpu] {
		return nil, newImages, nil // the window stays open
	}
	return l.closeWindow(cpu), newImages, nil
}

// window is what one CPU's drains have booked since the CPU's last
// batch: the profiles merged over the drains, the drop counters summed,
// and the driver's state at the last drain merged, which the batch
// reports (Delivered, End).
type window struct {
	flat                       flatBook
	stk                        stackBook
	me                         meBook
	drops, stackDrops, meDrops map[string]uint64
	own                        uint64 // the driver's own drops in drops: Accounted counts them
	drains                     int    // drains merged since the last batch
	end, delivered             uint64
}

// add adds d to the counter name of *m, making the map on the first
// nonzero count (a batch without drops carries none).
func (w *window) add(m *map[string]uint64, name string, d uint64) {
	if d == 0 {
		return
	}
	if *m == nil {
		*m = map[string]uint64{}
	}
	(*m)[name] += d
}

// empty reports whether the window holds nothing worth a batch.
func (w *window) empty() bool {
	return w.flat.empty() && len(w.stk.counts) == 0 && w.me.empty() &&
		w.drops == nil && w.stackDrops == nil && w.meDrops == nil
}

// CloseWindow ends cpu's publish window now, whatever its length, and
// returns the batch of what it merged (nil: nothing). The daemon closes
// every window before an epoch cut, so the batches land in the epoch
// they were drained in, and at the end of the run.
func (l *Ledger) CloseWindow(cpu int) (*wire.Batch, error) {
	if cpu < 0 || cpu >= len(l.seq) {
		return nil, fmt.Errorf("node: close window of cpu %d of %d", cpu, len(l.seq))
	}
	return l.closeWindow(cpu), nil
}

// Windowed reports how many drains cpu's open window has merged that no
// batch has published yet (0: none, or every drain so far had nothing).
func (l *Ledger) Windowed(cpu int) int {
	if cpu < 0 || cpu >= len(l.win) || l.win[cpu].empty() {
		return 0
	}
	return l.win[cpu].drains
}

// closeWindow turns cpu's window into its next batch and starts a new
// window; nil if the window holds nothing.
func (l *Ledger) closeWindow(cpu int) *wire.Batch {
	w := &l.win[cpu]
	if w.empty() {
		w.drains = 0
		return nil
	}
	drops, stackDrops, meDrops := w.drops, w.stackDrops, w.meDrops
	b := l.att.batch(&w.flat, l.host, l.epoch, uint16(cpu), l.seq[cpu], l.lastCycle[cpu], w.end, drops)
	for name, d := range drops {
		l.dropsBooked[name] += d
	}
	for name, d := range stackDrops {
		l.stackBooked[name] += d
	}
	if len(w.stk.counts) > 0 || stackDrops != nil {
		b.Version, b.Stacks, b.StackDrops = wire.StackVersion, w.stk.batch(), stackDrops
		l.stats.Stacks += uint64(len(b.Stacks))
		l.stats.StackSamples += b.StackTotal()
	}
	if !w.me.empty() || meDrops != nil {
		b.Version, b.MeDrops = wire.MeVersion, meDrops
		b.MeAddrs = w.me.addrBatch(l.att.images)
		b.Me, b.MeUnknown, b.MeHist, b.MeHistDropped = w.me.batch(l.att.images)
		for name, d := range meDrops {
			l.meBooked[name] += d
		}
		l.stats.MeEntries += uint64(len(b.Me))
		l.stats.MeUnknown += b.MeUnknown
		l.stats.MeSamples += b.MeTotal()
	}
	l.accounted[cpu] += b.Total() + w.own
	b.Delivered, b.Accounted = w.delivered, l.accounted[cpu]
	if l.epochFirst[cpu] == 0 {
		l.epochFirst[cpu] = l.seq[cpu]
	}
	l.seq[cpu]++
	l.lastCycle[cpu] = w.end
	l.stats.Batches++
	l.stats.Entries += uint64(len(b.Entries) + len(b.Unknown))
	for _, u := range b.Unknown {
		l.stats.Unknown += u.Count
	}
	l.stats.Samples += b.Total()
	w.drops, w.stackDrops, w.meDrops, w.own, w.drains = nil, nil, nil, 0, 0
	return b
}

// CheckCut reports whether the books can cut to epoch next: epochs only
// move forward.
func (l *Ledger) CheckCut(next uint64) error {
	if next <= l.epoch {
		return fmt.Errorf("node: cut to epoch %d: already in epoch %d", next, l.epoch)
	}
	return nil
}

// Cut leaves the current epoch for next and reports, per CPU, the last
// batch published into the epoch left (0: none). The caller drains every
// CPU into the old epoch first (or has nothing left to drain).
func (l *Ledger) Cut(next uint64) (EpochClose, error) {
	if err := l.CheckCut(next); err != nil {
		return EpochClose{}, err
	}
	for cpu := range l.win {
		if !l.win[cpu].empty() {
			// Its samples were drained in the epoch being left: cutting
			// now would publish them into the next one.
			return EpochClose{}, fmt.Errorf("node: cut to epoch %d: cpu %d's publish window is open (%d drains unpublished)",
				next, cpu, l.win[cpu].drains)
		}
	}
	c := EpochClose{Epoch: l.epoch, LastSeq: make([]uint64, len(l.seq)), Next: next}
	for cpu := range l.seq {
		if l.epochFirst[cpu] != 0 {
			c.LastSeq[cpu] = l.seq[cpu] - 1
		}
		l.epochFirst[cpu] = 0
	}
	l.epoch = next
	return c, nil
}

// Epoch is the epoch batches are booked into.
func (l *Ledger) Epoch() uint64 { return l.epoch }

// CPUs is the number of CPUs the books keep.
func (l *Ledger) CPUs() int { return len(l.seq) }

// Stats returns the batch, entry, sample, unknown and image counts (the
// drain counts and host time are the daemon's, not the books').
func (l *Ledger) Stats() DaemonStats { return l.stats }

// Booked is what the books have reported so far, for the node's metrics.
type Booked struct {
	// Delivered is the drivers' interrupts as of each CPU's last drain
	// (the batches' Delivered, summed over CPUs).
	Delivered uint64
	// Drops and StackDrops are the drop counters the published batches
	// carried, by name, summed: the driver's own and a predecessor's
	// carried losses.
	Drops, StackDrops map[string]uint64
	// MeDrops are the ProfileMe drop counters the batches carried.
	MeDrops map[string]uint64
}

// Booked returns the running totals of what the batches reported.
func (l *Ledger) Booked() Booked {
	b := Booked{Drops: maps.Clone(l.dropsBooked), StackDrops: maps.Clone(l.stackBooked), MeDrops: maps.Clone(l.meBooked)}
	for _, d := range l.delivered {
		b.Delivered += d
	}
	return b
}

// ImageFigures returns the per-image sample and entry counts, sorted by
// samples, most first.
func (l *Ledger) ImageFigures() []ImageFigures {
	out := make([]ImageFigures, 0, len(l.att.byImage))
	for _, f := range l.att.byImage {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b ImageFigures) int {
		if c := cmp.Compare(b.Samples, a.Samples); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
	return out
}

// memoryBytes estimates the books' memory: the image maps and, per CPU,
// the largest batch built.
func (l *Ledger) memoryBytes() int {
	perCount := int(unsafe.Sizeof(entryKey{})) + 8
	perStack := int(unsafe.Sizeof(wire.StackEntry{})) + 16 + 12*8 // entry, key, a typical chain
	perMe := int(unsafe.Sizeof(meKey{})+unsafe.Sizeof(wire.MeCounts{})) + 16
	n := l.att.maps.MemoryBytes()
	for i := range l.win {
		w := &l.win[i]
		n += w.flat.peak*perCount + w.stk.peak*perStack + w.me.peak*perMe
	}
	return n
}
