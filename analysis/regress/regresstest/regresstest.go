// Package regresstest is the regression tests' fleet: two images, four
// procedures, and epochs of chosen cycles counts, in memory or as the
// records to write into a storage database. Tests of regress, the web's
// /regressions page and cluster's regression watch share it; nothing but
// tests imports it.
//
//	/bin/app   steady [0x210,0x260)  jumpy [0x260,0x300)  tiny [0x300,0x340)
//	/lib/libc  memcpy [0x210,0x250)
package regresstest

import (
	"dcpi/analysis"
	"dcpi/storage"
	"dcpi/wire"
)

// Base is the images' load base: offsets are counted from it.
const Base = 0x120000000

// Keys of the two images.
var (
	App  = mustKey("buildid:a11a11a11a")
	Libc = mustKey("buildid:11bc11bc11")
)

func mustKey(s string) wire.ImageKey {
	k, err := wire.ParseImageKey(s)
	if err != nil {
		panic(err) // a constant
	}
	return k
}

// Images are the two images' records, as nodes upload them.
func Images() []*wire.ImageRecord {
	sym := func(name string, off, size uint64) wire.Symbol {
		return wire.Symbol{Name: name, Addr: Base + off, Size: size}
	}
	return []*wire.ImageRecord{
		{Version: wire.Version, Key: App, Path: "/bin/app", TextStart: Base + 0x210, TextEnd: Base + 0x400, Base: Base,
			Symbols: []wire.Symbol{sym("steady", 0x210, 0x50), sym("jumpy", 0x260, 0xa0), sym("tiny", 0x300, 0x40)}},
		{Version: wire.Version, Key: Libc, Path: "/lib/libc", TextStart: Base + 0x210, TextEnd: Base + 0x1000, Base: Base,
			Symbols: []wire.Symbol{sym("memcpy", 0x210, 0x40)}},
	}
}

// Epoch is one epoch: its state and its cycles samples per procedure.
type Epoch struct {
	State                       storage.EpochState
	Steady, Jumpy, Tiny, Memcpy uint64
}

// Steady is n sealed epochs of the same shares: steady 50%, jumpy 10%,
// memcpy 40%, tiny two samples.
func Steady(n int) []Epoch {
	out := make([]Epoch, n)
	for i := range out {
		out[i] = Epoch{State: storage.EpochSealed, Steady: 5000, Jumpy: 1000, Tiny: 2, Memcpy: 4000}
	}
	return out
}

// Records are epochs' samples (epoch i+1 is epochs[i], host "alpha") and
// their metadata.
func Records(epochs []Epoch) ([]storage.Record, []storage.Epoch) {
	var recs []storage.Record
	var meta []storage.Epoch
	for i, e := range epochs {
		n := uint64(i + 1)
		for _, c := range []struct {
			image  wire.ImageKey
			offset uint64
			count  uint64
		}{{App, 0x210, e.Steady}, {App, 0x260, e.Jumpy}, {App, 0x300, e.Tiny}, {Libc, 0x220, e.Memcpy}} {
			if c.count > 0 {
				recs = append(recs, storage.Record{Epoch: n, Image: c.image, Offset: c.offset, Host: "alpha", Count: c.count})
			}
		}
		meta = append(meta, storage.Epoch{Number: n, State: e.State})
	}
	return recs, meta
}

// Mem is epochs in memory: the source and the epoch list.
func Mem(epochs []Epoch) (*analysis.MemSource, []storage.Epoch) {
	m := analysis.NewMemSource()
	for _, r := range Images() {
		m.PutImage(r)
	}
	recs, meta := Records(epochs)
	for _, r := range recs {
		m.Add(r)
	}
	return m, meta
}
