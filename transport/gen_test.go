package transport

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dcpi/internal/testrand"
	"dcpi/wire"
)

// testRand returns a generator whose seed the test log names, so a failure
// can be replayed with -seed.
func testRand(t testing.TB) *rand.Rand { return testrand.New(t) }

func randKey(r *rand.Rand) wire.ImageKey {
	id := make([]byte, 20)
	for i := range id {
		id[i] = byte(r.Uint32())
	}
	k, err := wire.NewImageKey(wire.KindBuildID, id)
	if err != nil {
		panic(err)
	}
	return k
}

// genBatch builds a valid batch of up to maxEntries entries over keys.
func genBatch(r *rand.Rand, host string, epoch uint64, cpu uint16, seq uint64, maxEntries int, keys []wire.ImageKey) *wire.Batch {
	b := &wire.Batch{Version: wire.Version, Host: host, Epoch: epoch, CPU: cpu, Seq: seq,
		Start: seq * 1000, End: seq*1000 + 999}
	for range r.IntN(maxEntries + 1) {
		b.Entries = append(b.Entries, wire.Entry{Image: keys[r.IntN(len(keys))], Event: uint8(r.IntN(3)),
			Offset: uint64(r.IntN(1<<16)) * 4, Count: 1 + uint64(r.IntN(100))})
	}
	for range r.IntN(3) {
		b.Unknown = append(b.Unknown, wire.UnknownEntry{PID: uint32(r.IntN(100)), PC: r.Uint64() >> 20, Count: 1 + uint64(r.IntN(5))})
	}
	if r.IntN(3) == 0 {
		b.Drops = map[string]uint64{"driver.overflow_full": 1 + uint64(r.IntN(50))}
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

func genImage(r *rand.Rand, key wire.ImageKey, syms int) *wire.ImageRecord {
	rec := &wire.ImageRecord{Version: wire.Version, Key: key, Path: fmt.Sprintf("/bin/prog%d", r.IntN(100)),
		Size: 1 << 16, TextStart: 0x120000000, TextEnd: 0x120010000}
	for i := range syms {
		rec.Symbols = append(rec.Symbols, wire.Symbol{Name: fmt.Sprintf("proc_%d", i), Addr: 0x120000000 + uint64(i)*64, Size: 64})
	}
	return rec
}
