package node

import (
	"fmt"

	"dcpi/wire"
)

// attributor is the daemon's sample processing (sec. 4.3.1): it maps each
// entry leaving the driver, keyed by process incarnation and PC, to an
// image and offset with the image maps, and merges the counts into the
// profile of the batch being built. Samples no map covers go to the
// "unknown" profile with the PID they came from.
type attributor struct {
	maps *ImageMaps
	// perProcess names the image paths whose profiles keep the PID (the
	// configuration's per-process profiles); others merge all processes.
	perProcess map[string]bool

	counts  map[entryKey]uint64
	unknown map[unknownKey]uint64
	keys    map[string]wire.ImageKey // parsed image identities
	samples uint64                   // everything added since the last batch

	// byImage counts, per image path, the samples and the driver entries
	// that carried them: entries per sample is the image's miss rate in
	// the driver (every entry leaving the driver was created by a miss, or
	// is a sample written straight to the buffer during a flush), which is
	// how Table 4 compares workloads.
	byImage map[string]*ImageFigures
	peak    int // the most distinct counts one batch has held
}

// ImageFigures are the daemon's per-image counts: samples attributed to
// the image, and the driver entries they arrived in.
type ImageFigures struct {
	Path             string
	Samples, Entries uint64
}

type entryKey struct {
	image  wire.ImageKey
	offset uint64
	event  uint8
	pid    uint32
}

type unknownKey struct {
	pid   uint32
	pc    uint64
	event uint8
}

func newAttributor(maps *ImageMaps, perProcess []string) *attributor {
	a := &attributor{maps: maps, perProcess: map[string]bool{}, keys: map[string]wire.ImageKey{},
		byImage: map[string]*ImageFigures{}}
	for _, p := range perProcess {
		a.perProcess[p] = true
	}
	a.reset()
	return a
}

func (a *attributor) reset() {
	a.peak = max(a.peak, len(a.counts)+len(a.unknown))
	a.counts = make(map[entryKey]uint64)
	a.unknown = make(map[unknownKey]uint64)
	a.samples = 0
}

// add attributes entries. It returns the images seen for the first time,
// whose records the daemon must publish once.
func (a *attributor) add(entries []Entry) (newImages []Mapping, err error) {
	for _, e := range entries {
		a.samples += uint64(e.Count)
		m, off, pid, ok := a.maps.Resolve(e.PID, e.PC)
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
			a.unknown[unknownKey{pid: uint32(pid), pc: e.PC, event: e.Event}] += uint64(e.Count)
			continue
		}
		key, seen := a.keys[m.Image]
		if !seen {
			if key, err = wire.ParseImageKey(m.Image); err != nil {
				return newImages, fmt.Errorf("node: image %s: %w", m.Path, err)
			}
			a.keys[m.Image] = key
			newImages = append(newImages, m)
		}
		k := entryKey{image: key, offset: off, event: e.Event}
		if a.perProcess[m.Path] {
			k.pid = uint32(pid)
		}
		a.counts[k] += uint64(e.Count)
	}
	return newImages, nil
}

// batch returns the accumulated profile as a batch and starts a new one.
func (a *attributor) batch(host string, epoch uint64, cpu uint16, seq, start, end uint64, drops map[string]uint64) *wire.Batch {
	b := &wire.Batch{Version: wire.Version, Host: host, Epoch: epoch, CPU: cpu, Seq: seq,
		Start: start, End: end, Drops: drops}
	for k, n := range a.counts {
		b.Entries = append(b.Entries, wire.Entry{Image: k.image, Offset: k.offset, Event: k.event, PID: k.pid, Count: n})
	}
	for k, n := range a.unknown {
		b.Unknown = append(b.Unknown, wire.UnknownEntry{PID: k.pid, PC: k.pc, Event: k.event, Count: n})
	}
	b.Normalize()
	a.reset()
	return b
}
