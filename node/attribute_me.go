package node

import (
	"cmp"
	"slices"

	"dcpi/wire"
)

// meBook is the daemon's processing of the ProfileMe samples leaving the
// drivers: each (incarnation, PC) is attributed through the image maps as
// a counter sample is, and the sums of equal (image, offset, PID) merge.
// The PID follows the flat rule (kept for an image with per-process
// profiles, 0 otherwise). A PC no map covers is counted in unknown: a
// ProfileMe record of an unmapped PC says nothing a tool could show
// against code, so only its number is kept, for conservation.
type meBook struct {
	counts  map[meKey]*wire.MeCounts
	unknown uint64
	samples uint64 // everything added since the last batch
	peak    int
}

type meKey struct {
	offset uint64
	image  uint32 // index into attributor.images
	pid    uint32
}

// addMe attributes ProfileMe samples; new images are appended to
// newImages.
func (a *attributor) addMe(b *meBook, samples []MeSample, newImages []Mapping) ([]Mapping, error) {
	if b.counts == nil {
		b.counts = map[meKey]*wire.MeCounts{}
	}
	for i := range samples {
		s := &samples[i]
		n := s.Counts[wire.MeSamples]
		b.samples += n
		m, off, pid, ok := a.maps.Resolve(s.PID, s.PC)
		if !ok {
			b.unknown += n
			continue
		}
		img, err := a.intern(m, &newImages)
		if err != nil {
			return newImages, err
		}
		k := meKey{image: img, offset: off}
		if a.perProcess[m.Path] {
			k.pid = uint32(pid)
		}
		if c := b.counts[k]; c != nil {
			c.Add(&s.Counts)
			continue
		}
		c := s.Counts
		b.counts[k] = &c
	}
	return newImages, nil
}

// empty reports whether nothing was added since the last batch.
func (b *meBook) empty() bool { return len(b.counts) == 0 && b.unknown == 0 }

// batch returns the accumulated entries in wire's canonical order
// (image, offset, PID) and the unknown count, and starts anew.
func (b *meBook) batch(images []wire.ImageKey) ([]wire.MeEntry, uint64) {
	b.peak = max(b.peak, len(b.counts))
	out := make([]wire.MeEntry, 0, len(b.counts))
	for k, c := range b.counts {
		out = append(out, wire.MeEntry{Image: images[k.image], Offset: k.offset, PID: k.pid, Counts: *c})
	}
	slices.SortFunc(out, func(x, y wire.MeEntry) int {
		if c := x.Image.Compare(y.Image); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Offset, y.Offset); c != 0 {
			return c
		}
		return cmp.Compare(x.PID, y.PID)
	})
	unknown := b.unknown
	clear(b.counts)
	b.unknown, b.samples = 0, 0
	return out, unknown
}
