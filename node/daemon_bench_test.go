package node

import (
	"fmt"
	"testing"

	"dcpi/hwsim/alpha"
)

// BenchmarkDaemon measures the daemon's per-entry processing (sec. 4.3.1):
// each entry leaving the driver is mapped from (incarnation, PC) to
// (image, offset) through the image maps and merged into the batch being
// built, and every 8K entries (one overflow buffer) the batch is
// normalized. The baseline in the same run only sums the same entries in
// a Go map by (PID, PC, event), with no attribution.
//
//	go test -run XXX -bench Daemon -benchmem ./node
func BenchmarkDaemon(b *testing.B) {
	const procs, imagesPerProc, perBuffer = 40, 3, 8 << 10
	maps := mapsWithKernel(Mapping{Base: alpha.KernelBase, Size: 1 << 22, Image: "buildid:" + fmt.Sprintf("%040x", 1), Path: "/vmunix"})
	for p := range uint32(procs) {
		inc := p + 1
		maps.ProcessEvent(Event{Kind: EventExec, PID: int(100 + p), Incarnation: inc})
		for i := range uint64(imagesPerProc) {
			maps.ProcessEvent(Event{Kind: EventMap, PID: int(100 + p), Incarnation: inc,
				Base: 0x120000000 + i<<24, Size: 1 << 20, ImageID: "buildid:" + fmt.Sprintf("%040x", 2+uint64(p%8)*4+i),
				Path: fmt.Sprintf("/bin/prog%d-%d", p%8, i)})
		}
	}
	entries := make([]Entry, perBuffer)
	for i := range entries {
		p := uint32(i % procs)
		pc := 0x120000000 + uint64(i%imagesPerProc)<<24 + uint64(i*52%(1<<20))&^3
		if i%10 == 0 {
			p, pc = 0, alpha.KernelBase+uint64(i*36%(1<<22))&^3
		}
		entries[i] = Entry{PID: p + 1, PC: pc, Event: uint8(i % 3 / 2), Count: uint32(1 + i%7)}
	}

	b.Run("attribute", func(b *testing.B) {
		at := newAttributor(maps, nil)
		var fb flatBook
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := at.add(&fb, entries); err != nil {
				b.Fatal(err)
			}
			at.batch(&fb, "h", 1, 0, uint64(i+1), 0, 1, nil)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(entries)), "ns/entry")
	})
	b.Run("baseline-map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m := make(map[benchKey]uint64)
			for _, e := range entries {
				m[benchKey{e.PID, e.PC, e.Event}] += uint64(e.Count)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(entries)), "ns/entry")
	})
}
