package node

import (
	"cmp"
	"fmt"
	"slices"

	"dcpi/wire"
)

// attributor is the daemon's sample processing (sec. 4.3.1): it maps each
// entry leaving the driver, keyed by process incarnation and PC, to an
// image and offset with the image maps, and merges the counts into the
// profile of the batch being built. Samples no map covers go to the
// "unknown" profile with the PID they came from.
type attributor struct {
	maps *ImageMaps
	// perProcess names the images whose profiles keep the PID (the
	// configuration's per-process profiles); others merge all processes.
	perProcess perProcess
	// perThread keeps the TID instead (Config.PerThread, perthread.go).
	perThread bool

	// Images are interned: an entry key holds a small index, so the
	// counts map hashes 24 bytes, not a 34-byte image key, and the batch
	// sorts by precomputed rank instead of comparing keys.
	index  map[string]uint32 // image identity -> index into images
	images []wire.ImageKey

	// byImage counts, per image path, the samples and the driver entries
	// that carried them: entries per sample is the image's miss rate in
	// the driver (every entry leaving the driver was created by a miss, or
	// is a sample written straight to the buffer during a flush), which is
	// how Table 4 compares workloads.
	byImage map[string]*ImageFigures
}

// flatBook is the flat profile of the batch being built: counts by
// (image, offset, event, PID) and the unknown profile. The ledger keeps
// one per CPU, merging that CPU's drains until its publish window closes.
type flatBook struct {
	counts  map[entryKey]uint64
	unknown map[unknownKey]uint64
	run     []counted // batch's scratch
	samples uint64    // everything added since the last batch
	peak    int       // the most distinct counts one batch has held
}

// empty reports whether nothing was added since the last batch.
func (b *flatBook) empty() bool { return len(b.counts) == 0 && len(b.unknown) == 0 }

func (b *flatBook) reset() {
	b.peak = max(b.peak, len(b.counts)+len(b.unknown))
	clear(b.counts) // keeps the buckets for the next batch
	clear(b.unknown)
	b.samples = 0
}

// ImageFigures are the daemon's per-image counts: samples attributed to
// the image, and the driver entries they arrived in.
type ImageFigures struct {
	Path             string
	Samples, Entries uint64
}

type entryKey struct {
	offset uint64
	image  uint32 // index into attributor.images
	pid    uint32
	event  uint8
}

type counted struct {
	k entryKey
	n uint64
}

type unknownKey struct {
	pid   uint32
	pc    uint64
	event uint8
}

func newAttributor(maps *ImageMaps, perProcess []string) *attributor {
	return &attributor{maps: maps, perProcess: newPerProcess(perProcess), index: map[string]uint32{},
		byImage: map[string]*ImageFigures{}}
}

// add attributes entries into b. It returns the images seen for the
// first time, whose records the daemon must publish once.
func (a *attributor) add(b *flatBook, entries []Entry) (newImages []Mapping, err error) {
	if b.counts == nil {
		b.counts, b.unknown = map[entryKey]uint64{}, map[unknownKey]uint64{}
	}
	for _, e := range entries {
		b.samples += uint64(e.Count)
		m, off, pid, tid, ok := a.maps.ResolveThread(e.PID, e.PC)
		path := m.Path
		if !ok {
			path = "unknown"
		}
		f := a.byImage[path]
		if f == nil {
			f = &ImageFigures{Path: path}
			a.byImage[path] = f
		}
		f.Samples += uint64(e.Count)
		f.Entries++
		if !ok {
			b.unknown[unknownKey{pid: uint32(pid), pc: e.PC, event: e.Event}] += uint64(e.Count)
			continue
		}
		img, err := a.intern(m, &newImages)
		if err != nil {
			return newImages, err
		}
		k := entryKey{image: img, offset: off, event: e.Event}
		if a.perProcess.keeps(m.Path) {
			k.pid = uint32(pid)
			if a.perThread {
				k.pid = uint32(tid)
			}
		}
		b.counts[k] += uint64(e.Count)
	}
	return newImages, nil
}

// intern returns m's image index, appending m to newImages the first
// time it is seen.
func (a *attributor) intern(m Mapping, newImages *[]Mapping) (uint32, error) {
	if img, seen := a.index[m.Image]; seen {
		return img, nil
	}
	key, err := wire.ParseImageKey(m.Image)
	if err != nil {
		return 0, fmt.Errorf("node: image %s: %w", m.Path, err)
	}
	img := uint32(len(a.images))
	a.index[m.Image] = img
	a.images = append(a.images, key)
	*newImages = append(*newImages, m)
	return img, nil
}

// batch returns the profile accumulated in fb as a batch and starts a new
// one.
func (a *attributor) batch(fb *flatBook, host string, epoch uint64, cpu uint16, seq, start, end uint64, drops map[string]uint64) *wire.Batch {
	b := &wire.Batch{Version: wire.FlatVersion, Host: host, Epoch: epoch, CPU: cpu, Seq: seq,
		Start: start, End: end, Drops: drops}
	// The batch's canonical order is (image key, event, offset, PID):
	// rank the images once, then sort on integers.
	rank := make([]uint32, len(a.images))
	order := make([]uint32, len(a.images))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(x, y uint32) int { return a.images[x].Compare(a.images[y]) })
	for r, i := range order {
		rank[i] = uint32(r)
	}
	run := fb.run[:0]
	for k, n := range fb.counts {
		run = append(run, counted{k, n})
	}
	slices.SortFunc(run, func(x, y counted) int {
		// (rank, event) packed in one word, then offset, then PID.
		hx, hy := uint64(rank[x.k.image])<<8|uint64(x.k.event), uint64(rank[y.k.image])<<8|uint64(y.k.event)
		if c := cmp.Compare(hx, hy); c != 0 {
			return c
		}
		if c := cmp.Compare(x.k.offset, y.k.offset); c != 0 {
			return c
		}
		return cmp.Compare(x.k.pid, y.k.pid)
	})
	b.Entries = make([]wire.Entry, len(run))
	for i, c := range run {
		b.Entries[i] = wire.Entry{Image: a.images[c.k.image], Offset: c.k.offset, Event: c.k.event, PID: c.k.pid, Count: c.n}
	}
	fb.run = run
	for k, n := range fb.unknown {
		b.Unknown = append(b.Unknown, wire.UnknownEntry{PID: k.pid, PC: k.pc, Event: k.event, Count: n})
	}
	slices.SortFunc(b.Unknown, func(x, y wire.UnknownEntry) int {
		if c := cmp.Compare(x.PID, y.PID); c != 0 {
			return c
		}
		if c := cmp.Compare(x.PC, y.PC); c != 0 {
			return c
		}
		return cmp.Compare(x.Event, y.Event)
	})
	// Entries and unknown are now in wire's canonical order, unique and
	// nonzero (map keys, counts of at least one sample), which Validate
	// checks when the batch is encoded; Normalize would sort them again.
	fb.reset()
	return b
}
