package node

import (
	"cmp"
	"encoding/binary"
	"slices"

	"dcpi/wire"
)

// stackBook is the daemon's processing of the stacks leaving the drivers:
// each frame is attributed through the image maps as a flat PC is (an
// image and an offset; a PC no map covers keeps its raw value with the
// zero image), and equal (PID, event, frames, truncated) merge. The PID
// follows the flat rule, decided by the leaf frame: kept for an image
// with per-process profiles and for an unmapped leaf, 0 otherwise.
type stackBook struct {
	counts  map[string]*wire.StackEntry
	key     []byte // scratch
	samples uint64 // everything added since the last batch
	peak    int
}

// addStacks attributes stacks; new images are appended to newImages.
func (a *attributor) addStacks(b *stackBook, stacks []StackSample, newImages []Mapping) ([]Mapping, error) {
	if b.counts == nil {
		b.counts = map[string]*wire.StackEntry{}
	}
	for _, s := range stacks {
		if len(s.Frames) == 0 || len(s.Frames) > wire.MaxStackFrames {
			continue // the driver never makes one; nothing to attribute
		}
		b.samples += uint64(s.Count)
		key := b.key[:0]
		frames := make([]wire.Frame, len(s.Frames))
		var pid uint32
		for i, pc := range s.Frames {
			m, off, p, ok := a.maps.Resolve(s.PID, pc)
			if !ok {
				frames[i] = wire.Frame{Offset: pc}
				key = binary.LittleEndian.AppendUint32(key, 0)
				key = binary.LittleEndian.AppendUint64(key, pc)
				if i == 0 {
					pid = uint32(p)
				}
				continue
			}
			img, err := a.intern(m, &newImages)
			if err != nil {
				return newImages, err
			}
			frames[i] = wire.Frame{Image: a.images[img], Offset: off}
			key = binary.LittleEndian.AppendUint32(key, img+1)
			key = binary.LittleEndian.AppendUint64(key, off)
			if i == 0 && a.perProcess.keeps(m.Path) {
				pid = uint32(p)
			}
		}
		key = binary.LittleEndian.AppendUint32(key, pid)
		key = append(key, s.Event, boolByte(s.Truncated))
		b.key = key
		if e := b.counts[string(key)]; e != nil {
			e.Count += uint64(s.Count)
			continue
		}
		b.counts[string(key)] = &wire.StackEntry{PID: pid, Event: s.Event, Truncated: s.Truncated, Frames: frames, Count: uint64(s.Count)}
	}
	return newImages, nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// batch returns the accumulated stacks in wire's canonical order (PID,
// event, frames leaf first, truncated) and starts anew.
func (b *stackBook) batch() []wire.StackEntry {
	out := make([]wire.StackEntry, 0, len(b.counts))
	for _, e := range b.counts {
		out = append(out, *e)
	}
	slices.SortFunc(out, compareStackEntries)
	b.peak = max(b.peak, len(b.counts))
	clear(b.counts)
	b.samples = 0
	return out
}

// compareStackEntries is wire's canonical stack order.
func compareStackEntries(x, y wire.StackEntry) int {
	if c := cmp.Compare(x.PID, y.PID); c != 0 {
		return c
	}
	if c := cmp.Compare(x.Event, y.Event); c != 0 {
		return c
	}
	if c := slices.CompareFunc(x.Frames, y.Frames, wire.CompareFrames); c != 0 {
		return c
	}
	switch {
	case x.Truncated == y.Truncated:
		return 0
	case !x.Truncated:
		return -1
	}
	return 1
}
