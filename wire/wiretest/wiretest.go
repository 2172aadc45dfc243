// Package wiretest makes wire messages for tests, as net/http/httptest
// makes servers: random valid batches, image keys and image records drawn
// from a caller's generator (see internal/testrand), fixed image keys, and
// equality that does not tell a nil list from an empty one, as the decoder
// does not. It is for tests only; no production code imports it.
//
// One generator serves two kinds of test. Codec tests want every field over
// its whole range (the zero Options); tests of merging and storing want
// batches in given streams over a small space of images and offsets
// (Options.Host, Options.Images), so that batches collide and counts add up.
package wiretest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"

	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// Key is the i-th of a fixed family of build-ID image keys ("image-0000",
// "image-0001", ...), which sort in i's order for i < 10,000.
func Key(i int) wire.ImageKey {
	k, err := wire.NewImageKey(wire.KindBuildID, fmt.Appendf(nil, "image-%04d", i))
	if err != nil {
		panic(err) // a 10-byte build ID is valid
	}
	return k
}

// Keys returns Key(0) .. Key(n-1).
func Keys(n int) []wire.ImageKey {
	out := make([]wire.ImageKey, n)
	for i := range out {
		out[i] = Key(i)
	}
	return out
}

// RandKey returns a valid key of either kind: a SHA-256 or a build ID of
// any length from 1 to wire.MaxKeyBytes.
func RandKey(r *rand.Rand) wire.ImageKey {
	var id []byte
	kind := wire.KindBuildID
	if r.IntN(2) == 0 {
		kind, id = wire.KindSHA256, make([]byte, 32)
	} else {
		id = make([]byte, 1+r.IntN(wire.MaxKeyBytes))
	}
	for i := range id {
		id[i] = byte(r.Uint32())
	}
	k, err := wire.NewImageKey(kind, id)
	if err != nil {
		panic(err) // lengths are within NewImageKey's bounds
	}
	return k
}

// Uint64 favours small values, as real offsets and counts are, but reaches
// the whole range.
func Uint64(r *rand.Rand) uint64 {
	switch r.IntN(4) {
	case 0:
		return uint64(r.IntN(16))
	case 1:
		return uint64(r.IntN(1 << 16))
	case 2:
		return r.Uint64() >> r.IntN(64)
	}
	return r.Uint64()
}

// Options says what RandBatch draws. The zero value asks for a batch of no
// entries with every other field over its whole range.
type Options struct {
	// MinEntries and MaxEntries bound the number of entries, drawn
	// uniformly from [MinEntries, MaxEntries]; MinEntries above MaxEntries
	// is taken as MaxEntries.
	MinEntries, MaxEntries int

	// Host, CPU, Seq and Epoch place the batch in a stream when Host is
	// set; its interval is then [1000·Seq, 1000·Seq+999], so batches of a
	// stream follow one another. With Host empty the whole header is
	// random: any host, epoch, CPU (wire.AllCPUs too), sequence number and
	// interval.
	Host  string
	CPU   uint16
	Seq   uint64
	Epoch uint64

	// Images, when set, is the small space entries draw from: their image
	// from Images, event from [0, Events), offset from 4·[0, Offsets),
	// count from [1, MaxCount], and one in five a PID in 1..3; unknown
	// samples and drop counters are as small. With Images nil, each batch
	// draws 1 to 6 keys of RandKey and every entry field over its whole
	// range (events beyond the four the driver counts, too).
	Images   []wire.ImageKey
	Events   int    // default 3
	Offsets  int    // default 64
	MaxCount uint64 // default 100

	// MaxStacks, when above 0, makes the batch version wire.StackVersion
	// with up to MaxStacks call stacks and sometimes stack drops, drawn
	// after everything else (so the other fields are what they would be
	// without stacks). With Images set, frames come from Images and share
	// callers, so stacks collide; else every field is over its whole range.
	// Without stacks the batch is wire.FlatVersion.
	MaxStacks int
}

// RandBatch returns a valid, normalized batch drawn from r as o says, with
// nil rather than empty entries, unknown samples and drops.
func RandBatch(r *rand.Rand, o Options) *wire.Batch {
	b := &wire.Batch{Version: wire.FlatVersion}
	if o.Host == "" {
		// The order of the draws is fixed: the committed fuzz corpora
		// of package wire were made with it.
		b.Host = fmt.Sprintf("host-%d-example", r.IntN(1000))
		b.Epoch = Uint64(r)
		b.CPU = uint16(r.IntN(5))
		b.Seq = 1 + Uint64(r)>>1
		b.Start = Uint64(r) >> 1
		if r.IntN(8) == 0 {
			b.CPU = wire.AllCPUs
		}
		b.End = b.Start + Uint64(r)>>1
	} else {
		b.Host, b.CPU, b.Seq, b.Epoch = o.Host, o.CPU, o.Seq, o.Epoch
		b.Start, b.End = 1000*o.Seq, 1000*o.Seq+999
	}
	lo := min(o.MinEntries, o.MaxEntries)
	if o.Images == nil {
		wideEntries(r, b, lo, o.MaxEntries)
	} else {
		narrowEntries(r, b, lo, o)
	}
	if o.MaxStacks > 0 {
		b.Version = wire.StackVersion
		randStacks(r, b, o)
	}
	b.Normalize()
	if len(b.Entries) == 0 {
		b.Entries = nil
	}
	if len(b.Stacks) == 0 {
		b.Stacks = nil
	}
	if len(b.StackDrops) == 0 {
		b.StackDrops = nil
	}
	if len(b.Unknown) == 0 {
		b.Unknown = nil
	}
	if len(b.Drops) == 0 {
		b.Drops = nil
	}
	return b
}

// wideEntries draws entries, unknown samples and drops over the whole range
// the format carries, for codec tests.
func wideEntries(r *rand.Rand, b *wire.Batch, lo, hi int) {
	keys := make([]wire.ImageKey, 1+r.IntN(6))
	for i := range keys {
		keys[i] = RandKey(r)
	}
	for range lo + r.IntN(hi-lo+1) {
		e := wire.Entry{Image: keys[r.IntN(len(keys))], Event: uint8(r.IntN(4)), Offset: Uint64(r) >> 2, Count: 1 + Uint64(r)>>24}
		if r.IntN(4) == 0 {
			e.PID = uint32(Uint64(r))
		}
		if r.IntN(16) == 0 {
			e.Event = uint8(r.Uint32())
		}
		b.Entries = append(b.Entries, e)
	}
	for range r.IntN(hi/8 + 2) {
		b.Unknown = append(b.Unknown, wire.UnknownEntry{PID: uint32(r.IntN(70000)), PC: Uint64(r), Event: uint8(r.IntN(3)), Count: 1 + Uint64(r)>>24})
	}
	if r.IntN(2) == 0 {
		b.Drops = map[string]uint64{}
		for range 1 + r.IntN(4) {
			b.Drops[fmt.Sprintf("driver.drop_%d", r.IntN(10))] = Uint64(r) >> 8
		}
	}
}

// narrowEntries draws entries over o's small space, and unknown samples and
// drop counters over a space as small, so that batches collide.
func narrowEntries(r *rand.Rand, b *wire.Batch, lo int, o Options) {
	events, offsets, maxCount := o.Events, o.Offsets, o.MaxCount
	if events <= 0 {
		events = 3
	}
	if offsets <= 0 {
		offsets = 64
	}
	if maxCount == 0 {
		maxCount = 100
	}
	for range lo + r.IntN(o.MaxEntries-lo+1) {
		e := wire.Entry{Image: o.Images[r.IntN(len(o.Images))], Event: uint8(r.IntN(events)),
			Offset: 4 * uint64(r.IntN(offsets)), Count: 1 + r.Uint64N(maxCount)}
		if r.IntN(5) == 0 {
			e.PID = uint32(1 + r.IntN(3))
		}
		b.Entries = append(b.Entries, e)
	}
	for range r.IntN(3) {
		b.Unknown = append(b.Unknown, wire.UnknownEntry{PID: uint32(r.IntN(4)), PC: 4 * uint64(r.IntN(8)),
			Event: uint8(r.IntN(events)), Count: 1 + uint64(r.IntN(10))})
	}
	if r.IntN(3) == 0 {
		// Zero counts too: Normalize drops them, and stores must agree.
		b.Drops = map[string]uint64{wire.DropOverflowFull: uint64(r.IntN(5)), "daemon.unmapped": uint64(r.IntN(2))}
	}
}

// randStacks draws up to o.MaxStacks stacks and sometimes stack drops.
func randStacks(r *rand.Rand, b *wire.Batch, o Options) {
	narrow := o.Images != nil
	frame := func() wire.Frame {
		if narrow {
			return wire.Frame{Image: o.Images[r.IntN(len(o.Images))], Offset: 4 * uint64(r.IntN(16))}
		}
		if r.IntN(8) == 0 {
			return wire.Frame{Offset: Uint64(r)} // no image map covered it
		}
		return wire.Frame{Image: RandKey(r), Offset: Uint64(r)}
	}
	// A few shared callers, as real stacks share main and its callees.
	callers := make([]wire.Frame, 1+r.IntN(4))
	for i := range callers {
		callers[i] = frame()
	}
	for range r.IntN(o.MaxStacks + 1) {
		s := wire.StackEntry{Count: 1 + r.Uint64N(100)}
		s.Frames = append(s.Frames, frame())
		depth := r.IntN(6)
		if !narrow && r.IntN(16) == 0 {
			depth = wire.MaxStackFrames - 1
		}
		for range depth {
			if r.IntN(3) == 0 {
				s.Frames = append(s.Frames, frame())
			} else {
				s.Frames = append(s.Frames, callers[r.IntN(len(callers))])
			}
		}
		s.Truncated = r.IntN(5) == 0
		if narrow {
			s.Event = uint8(r.IntN(max(o.Events, 1)))
			if r.IntN(5) == 0 {
				s.PID = uint32(1 + r.IntN(3))
			}
		} else {
			s.Event = uint8(r.IntN(4))
			s.PID = uint32(Uint64(r))
			s.Count = 1 + Uint64(r)>>24
		}
		b.Stacks = append(b.Stacks, s)
	}
	if r.IntN(3) == 0 {
		b.StackDrops = map[string]uint64{"driver.stack_table_full": uint64(r.IntN(5)), "driver.stack_unwind": uint64(r.IntN(2))}
	}
}

// RandRecord returns a valid image record of a random key with up to
// maxSyms symbols, every field over its whole range.
func RandRecord(r *rand.Rand, maxSyms int) *wire.ImageRecord {
	rec := &wire.ImageRecord{
		Version:   wire.Version,
		Key:       RandKey(r),
		Path:      fmt.Sprintf("/usr/lib/lib%d.so", r.IntN(100)),
		Size:      Uint64(r),
		TextStart: Uint64(r) >> 1,
	}
	rec.TextEnd = rec.TextStart + Uint64(r)>>1
	for i := range r.IntN(maxSyms + 1) {
		rec.Symbols = append(rec.Symbols, wire.Symbol{Name: fmt.Sprintf("proc_%d_%d", i, r.IntN(1e6)), Addr: Uint64(r), Size: Uint64(r) >> 40})
	}
	return rec
}

// BatchEqual reports whether a and b are the same batch, taking nil and
// empty entries, unknown samples and drops as equal (the encoding does not
// tell them apart).
func BatchEqual(a, b *wire.Batch) bool {
	if len(a.Entries) != len(b.Entries) || len(a.Unknown) != len(b.Unknown) || len(a.Drops) != len(b.Drops) ||
		len(a.Stacks) != len(b.Stacks) || len(a.StackDrops) != len(b.StackDrops) ||
		len(a.Me) != len(b.Me) || len(a.MeDrops) != len(b.MeDrops) {
		return false
	}
	if len(a.Me) > 0 && !reflect.DeepEqual(a.Me, b.Me) || len(a.MeDrops) > 0 && !reflect.DeepEqual(a.MeDrops, b.MeDrops) {
		return false
	}
	if len(a.Entries) > 0 && !reflect.DeepEqual(a.Entries, b.Entries) ||
		len(a.Unknown) > 0 && !reflect.DeepEqual(a.Unknown, b.Unknown) ||
		len(a.Drops) > 0 && !reflect.DeepEqual(a.Drops, b.Drops) ||
		len(a.Stacks) > 0 && !reflect.DeepEqual(a.Stacks, b.Stacks) ||
		len(a.StackDrops) > 0 && !reflect.DeepEqual(a.StackDrops, b.StackDrops) {
		return false
	}
	x, y := *a, *b
	x.Entries, x.Unknown, x.Drops, x.Stacks, x.StackDrops, x.Me, x.MeDrops = nil, nil, nil, nil, nil, nil, nil
	y.Entries, y.Unknown, y.Drops, y.Stacks, y.StackDrops, y.Me, y.MeDrops = nil, nil, nil, nil, nil, nil, nil
	return reflect.DeepEqual(x, y)
}

// RecordEqual reports whether a and b are the same image record, taking
// nil and empty symbol lists as equal.
func RecordEqual(a, b *wire.ImageRecord) bool {
	if len(a.Symbols) == 0 && len(b.Symbols) == 0 {
		x, y := *a, *b
		x.Symbols, y.Symbols = nil, nil
		return reflect.DeepEqual(x, y)
	}
	return reflect.DeepEqual(a, b)
}

// Clone returns a deep copy of b, so a test can check that code under test
// left its input alone.
func Clone(b *wire.Batch) *wire.Batch {
	c := *b
	c.Entries = slices.Clone(b.Entries)
	c.Unknown = slices.Clone(b.Unknown)
	c.Drops = maps.Clone(b.Drops)
	c.Stacks = CloneStacks(b.Stacks)
	c.StackDrops = maps.Clone(b.StackDrops)
	c.Me = slices.Clone(b.Me)
	c.MeDrops = maps.Clone(b.MeDrops)
	return &c
}

// AddMe makes b a wire.MeVersion batch with up to maxEntries random
// ProfileMe entries over images and 4·[0, offsets), PIDs in 0..2, some
// unknown samples and sometimes drops; b stays normalized and valid.
func AddMe(r *rand.Rand, b *wire.Batch, images []wire.ImageKey, offsets, maxEntries int) {
	b.Version = wire.MeVersion
	for range r.IntN(maxEntries + 1) {
		var c wire.MeCounts
		c[wire.MeRetired] = 1 + r.Uint64N(20)
		c[wire.MeAbortIntr] = r.Uint64N(3)
		c[wire.MeSamples] = c[wire.MeRetired] + c[wire.MeAbortIntr]
		c[wire.MeDMiss] = r.Uint64N(c[wire.MeSamples] + 1)
		c[wire.MeHeadCycles] = r.Uint64N(100)
		c[wire.MeHist0+r.IntN(wire.MeHistBuckets)] = c[wire.MeSamples]
		b.Me = append(b.Me, wire.MeEntry{Image: images[r.IntN(len(images))], Offset: 4 * r.Uint64N(uint64(offsets)), PID: uint32(r.IntN(3)), Counts: c})
	}
	b.MeUnknown = r.Uint64N(4)
	if r.IntN(3) == 0 {
		b.MeDrops = map[string]uint64{wire.DropMeOverflowFull: 1 + r.Uint64N(9)}
	}
	b.Normalize()
}

// AddMeV2 adds to b, after AddMe, what a ProfileMe section of version 2
// carries: squashed aborts and pair statistics in some entries (within
// their rules), (PC, history) counts for every entry, a history drop
// count, and address hot lists for some.
func AddMeV2(r *rand.Rand, b *wire.Batch) {
	for i := range b.Me {
		e := &b.Me[i]
		c := &e.Counts
		if r.IntN(2) == 0 {
			sq := 1 + r.Uint64N(3)
			c[wire.MeAbortSquash] += sq
			c[wire.MeSamples] += sq
			c[wire.MeStage0+r.IntN(wire.MeStages)] = r.Uint64N(50)
			c[wire.MeFirst] = r.Uint64N(c[wire.MeSamples] + 1)
			c[wire.MeSecond] = r.Uint64N(c[wire.MeSamples] - c[wire.MeFirst] + 1)
			paired := c[wire.MeFirst] + c[wire.MeSecond]
			c[wire.MePartnerRetired] = r.Uint64N(paired + 1)
			c[wire.MeOverlap] = r.Uint64N(paired + 1)
			c[wire.MeUseful] = r.Uint64N(min(c[wire.MeOverlap], c[wire.MePartnerRetired]) + 1)
			if c[wire.MeOverlap] > 0 {
				c[wire.MeOverlapCycles] = r.Uint64N(100)
			}
			if paired > 0 {
				c[wire.MeInProgress] = r.Uint64N(200)
			}
		}
		left := c[wire.MeSamples]
		for left > 0 {
			n := 1 + r.Uint64N(left)
			b.MeHist = append(b.MeHist, wire.MeHistEntry{Image: e.Image, Offset: e.Offset, History: uint16(r.IntN(4)), Count: n})
			left -= n
		}
		if r.IntN(3) == 0 {
			l := hotlist.List{N: 1 + r.Uint64N(5)}
			for v := range r.Uint64N(3) {
				l.Entries = append(l.Entries, hotlist.Entry{Value: 0x1000 + 8*v, Count: 1})
			}
			l.N = max(l.N, uint64(len(l.Entries)))
			b.MeAddrs = append(b.MeAddrs, wire.MeAddrList{Image: e.Image, Offset: e.Offset, List: l})
		}
	}
	b.MeHistDropped = r.Uint64N(3)
	b.Normalize()
}

// CloneStacks returns a deep copy of stacks, frames included.
func CloneStacks(stacks []wire.StackEntry) []wire.StackEntry {
	if stacks == nil {
		return nil
	}
	c := make([]wire.StackEntry, len(stacks))
	for i, s := range stacks {
		c[i] = s
		c[i].Frames = slices.Clone(s.Frames)
	}
	return c
}
