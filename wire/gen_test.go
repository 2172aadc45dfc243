package wire

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dcpi/internal/testrand"
)

// testRand returns a generator whose seed the test log names, so a failure
// can be replayed with -seed.
func testRand(t testing.TB) *rand.Rand { return testrand.New(t) }

func randKey(r *rand.Rand) ImageKey {
	var id []byte
	kind := KindBuildID
	if r.IntN(2) == 0 {
		kind, id = KindSHA256, make([]byte, 32)
	} else {
		id = make([]byte, 1+r.IntN(MaxKeyBytes))
	}
	for i := range id {
		id[i] = byte(r.Uint32())
	}
	k, err := NewImageKey(kind, id)
	if err != nil {
		panic(err)
	}
	return k
}

// randUint64 favours small values, as real offsets and counts are, but
// reaches the whole range.
func randUint64(r *rand.Rand) uint64 {
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

// randBatch builds a valid batch of up to maxEntries entries.
func randBatch(r *rand.Rand, maxEntries int) *Batch {
	b := &Batch{
		Version: Version,
		Host:    fmt.Sprintf("host-%d-example", r.IntN(1000)),
		Epoch:   randUint64(r),
		CPU:     uint16(r.IntN(5)),
		Seq:     1 + randUint64(r)>>1,
		Start:   randUint64(r) >> 1,
	}
	if r.IntN(8) == 0 {
		b.CPU = AllCPUs
	}
	b.End = b.Start + randUint64(r)>>1
	keys := make([]ImageKey, 1+r.IntN(6))
	for i := range keys {
		keys[i] = randKey(r)
	}
	n := r.IntN(maxEntries + 1)
	for range n {
		e := Entry{Image: keys[r.IntN(len(keys))], Event: uint8(r.IntN(4)), Offset: randUint64(r) >> 2, Count: 1 + randUint64(r)>>24}
		if r.IntN(4) == 0 {
			e.PID = uint32(randUint64(r))
		}
		if r.IntN(16) == 0 {
			e.Event = uint8(r.Uint32())
		}
		b.Entries = append(b.Entries, e)
	}
	for range r.IntN(maxEntries/8 + 2) {
		b.Unknown = append(b.Unknown, UnknownEntry{PID: uint32(r.IntN(70000)), PC: randUint64(r), Event: uint8(r.IntN(3)), Count: 1 + randUint64(r)>>24})
	}
	if r.IntN(2) == 0 {
		b.Drops = map[string]uint64{}
		for range 1 + r.IntN(4) {
			b.Drops[fmt.Sprintf("driver.drop_%d", r.IntN(10))] = randUint64(r) >> 8
		}
	}
	b.Normalize()
	if len(b.Entries) == 0 {
		b.Entries = nil
	}
	if len(b.Unknown) == 0 {
		b.Unknown = nil
	}
	if len(b.Drops) == 0 {
		b.Drops = nil
	}
	return b
}

func randRecord(r *rand.Rand, maxSyms int) *ImageRecord {
	rec := &ImageRecord{
		Version:   Version,
		Key:       randKey(r),
		Path:      fmt.Sprintf("/usr/lib/lib%d.so", r.IntN(100)),
		Size:      randUint64(r),
		TextStart: randUint64(r) >> 1,
	}
	rec.TextEnd = rec.TextStart + randUint64(r)>>1
	for i := range r.IntN(maxSyms + 1) {
		rec.Symbols = append(rec.Symbols, Symbol{Name: fmt.Sprintf("proc_%d_%d", i, r.IntN(1e6)), Addr: randUint64(r), Size: randUint64(r) >> 40})
	}
	return rec
}
