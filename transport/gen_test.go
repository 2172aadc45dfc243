package transport

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dcpi/internal/testrand"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// testRand returns a generator whose seed the test log names, so a failure
// can be replayed with -seed.
func testRand(t testing.TB) *rand.Rand { return testrand.New(t) }

// streamBatch is batch seq of stream (host, cpu) in epoch, with up to
// maxEntries entries over keys.
func streamBatch(r *rand.Rand, host string, epoch uint64, cpu uint16, seq uint64, maxEntries int, keys []wire.ImageKey) *wire.Batch {
	return wiretest.RandBatch(r, wiretest.Options{Host: host, CPU: cpu, Seq: seq, Epoch: epoch,
		MaxEntries: maxEntries, Images: keys, Offsets: 1 << 16})
}

func genImage(r *rand.Rand, key wire.ImageKey, syms int) *wire.ImageRecord {
	rec := &wire.ImageRecord{Version: wire.Version, Key: key, Path: fmt.Sprintf("/bin/prog%d", r.IntN(100)),
		Size: 1 << 16, TextStart: 0x120000000, TextEnd: 0x120010000}
	for i := range syms {
		rec.Symbols = append(rec.Symbols, wire.Symbol{Name: fmt.Sprintf("proc_%d", i), Addr: 0x120000000 + uint64(i)*64, Size: 64})
	}
	return rec
}
