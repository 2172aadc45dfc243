package node

import (
	"cmp"
	"slices"

	"dcpi/internal/hotlist"

	"dcpi/wire"
)

// meBook is the daemon's processing of the ProfileMe samples leaving the
// drivers: each (incarnation, PC) is attributed through the image maps as
// a counter sample is, and the sums of equal (image, offset, PID) merge.
// The PID follows the flat rule (kept for an image with per-process
// profiles, 0 otherwise). A PC no map covers is counted in unknown: a
// ProfileMe record of an unmapped PC says nothing a tool could show
// against code, so only its number is kept, for conservation.
//
// The book also counts the attributed samples per (image, offset, path
// history), for path reconstruction, up to MaxMeHistPerBatch keys a batch;
// the samples of keys past it are counted in histDropped, so that per
// batch the history counts and histDropped add up to the entries' samples.
type meBook struct {
	counts      map[meKey]*wire.MeCounts
	hist        map[meHistKey]uint64
	histDropped uint64
	addrs       map[meHistKey]*hotlist.List // by (image, offset), hist 0
	unknown     uint64
	samples     uint64 // everything added since the last batch
	peak        int
}

// MaxMeHistPerBatch bounds the (PC, path-history) keys of one batch.
const MaxMeHistPerBatch = 1 << 15

type meHistKey struct {
	offset uint64
	image  uint32
	hist   uint16
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
		b.hist = map[meHistKey]uint64{}
		b.addrs = map[meHistKey]*hotlist.List{}
	}
	for i := range samples {
		s := &samples[i]
		if s.Addrs != nil {
			if err := a.addMeAddrs(b, s, &newImages); err != nil {
				return newImages, err
			}
			continue
		}
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
		hk := meHistKey{image: img, offset: off, hist: s.History}
		if _, ok := b.hist[hk]; ok || len(b.hist) < MaxMeHistPerBatch {
			b.hist[hk] += n
		} else {
			b.histDropped += n
		}
		k := meKey{image: img, offset: off}
		if a.perProcess.keeps(m.Path) {
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

// addMeAddrs merges an instruction's address hot list into the book's
// list of its (image, offset); a list of a PC no map covers is dropped
// (its samples are counted with the others).
func (a *attributor) addMeAddrs(b *meBook, s *MeSample, newImages *[]Mapping) error {
	m, off, _, ok := a.maps.Resolve(s.PID, s.PC)
	if !ok {
		return nil
	}
	img, err := a.intern(m, newImages)
	if err != nil {
		return err
	}
	k := meHistKey{image: img, offset: off}
	if have := b.addrs[k]; have != nil {
		merged := hotlist.Merge(have, s.Addrs, hotlist.NewCoin(hotlist.Seed(have, s.Addrs)))
		b.addrs[k] = &merged
		return nil
	}
	l := s.Addrs.Clone()
	b.addrs[k] = &l
	return nil
}

// addrBatch returns the address lists in wire's order and forgets them.
func (b *meBook) addrBatch(images []wire.ImageKey) []wire.MeAddrList {
	if len(b.addrs) == 0 {
		return nil
	}
	out := make([]wire.MeAddrList, 0, len(b.addrs))
	for k, l := range b.addrs {
		out = append(out, wire.MeAddrList{Image: images[k.image], Offset: k.offset, List: *l})
	}
	slices.SortFunc(out, func(x, y wire.MeAddrList) int {
		if c := x.Image.Compare(y.Image); c != 0 {
			return c
		}
		return cmp.Compare(x.Offset, y.Offset)
	})
	clear(b.addrs)
	return out
}

// empty reports whether nothing was added since the last batch.
func (b *meBook) empty() bool {
	return len(b.counts) == 0 && b.unknown == 0 && b.histDropped == 0 && len(b.addrs) == 0
}

// batch returns the accumulated entries in wire's canonical order
// (image, offset, PID), the unknown count, the history counts (in
// (image, offset, history) order) and the history drops, and starts anew.
func (b *meBook) batch(images []wire.ImageKey) ([]wire.MeEntry, uint64, []wire.MeHistEntry, uint64) {
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
	hist := make([]wire.MeHistEntry, 0, len(b.hist))
	for k, n := range b.hist {
		hist = append(hist, wire.MeHistEntry{Image: images[k.image], Offset: k.offset, History: k.hist, Count: n})
	}
	slices.SortFunc(hist, func(x, y wire.MeHistEntry) int {
		if c := x.Image.Compare(y.Image); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Offset, y.Offset); c != 0 {
			return c
		}
		return cmp.Compare(x.History, y.History)
	})
	unknown, histDropped := b.unknown, b.histDropped
	clear(b.counts)
	clear(b.hist)
	b.unknown, b.samples, b.histDropped = 0, 0, 0
	return out, unknown, hist, histDropped
}
