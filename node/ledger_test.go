package node

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dcpi/hwsim/alpha"
	"dcpi/internal/testrand"
	"dcpi/wire"
)

// ledgerModel is what the books must say, kept the simplest way: per CPU
// the next sequence number, the last one of the current epoch, what was
// published and dropped, the carried losses not yet reported.
type ledgerModel struct {
	epoch     uint64
	next      []uint64
	lastIn    []uint64 // last seq booked into the current epoch (0: none)
	published []uint64 // samples in batches, this run
	ownDrops  []uint64 // driver drops reported, this run
	carried   []uint64 // crash losses not yet reported
	reported  []uint64 // crash losses reported
	lastEnd   []uint64
	images    map[string]int // times each image was returned as new
	batches   uint64
	samples   uint64
}

// ledgerImages maps incarnations 1..procs to a few images each, and the
// kernel; the returned function draws an entry that lands in an image,
// in the kernel, or nowhere (unknown).
func ledgerImages(r *rand.Rand, procs int) (*ImageMaps, func() Entry) {
	kern := Mapping{Base: alpha.KernelBase, Size: 1 << 20, Image: fmt.Sprintf("buildid:%040x", 1), Path: "/vmunix"}
	im := mapsWithKernel(kern)
	for p := 1; p <= procs; p++ {
		im.ProcessEvent(Event{Kind: EventExec, PID: 100 + p, Incarnation: uint32(p)})
		for i := range 3 {
			id := 2 + (p+i)%5 // images shared between processes
			im.ProcessEvent(Event{Kind: EventMap, PID: 100 + p, Incarnation: uint32(p), Base: 0x120000000 + uint64(i)<<24,
				Size: 1 << 16, ImageID: fmt.Sprintf("buildid:%040x", id), Path: fmt.Sprintf("/bin/p%d", id)})
		}
	}
	return im, func() Entry {
		e := Entry{PID: uint32(1 + r.IntN(procs+1)), Event: uint8(r.IntN(2)), Count: uint32(1 + r.IntN(50))}
		switch r.IntN(10) {
		case 0:
			e.PC = alpha.KernelBase + uint64(r.IntN(1<<20))&^3
		case 1:
			e.PC = 0x200000000 + uint64(r.IntN(1<<10))&^3 // in no image
		default:
			e.PC = 0x120000000 + uint64(r.IntN(3))<<24 + uint64(r.IntN(1<<16))&^3
		}
		return e
	}
}

// TestLedgerAgainstModel drives the daemon's books with random drains
// (empty ones, entries in images, in the kernel and unknown, driver drops)
// and random cuts, some refused, on several CPUs of a restarted agent, and
// checks every batch and epoch close against the model: sequence numbers
// contiguous per CPU from FirstSeq, Accounted = samples published + own
// drops, Delivered passed through, carried losses reported exactly once,
// each new image returned once, no empty batch, and each close naming the
// last batch of its epoch.
func TestLedgerAgainstModel(t *testing.T) {
	r := testrand.New(t)
	for round := range 20 {
		cpus := 1 + r.IntN(4)
		cfg := DefaultConfig()
		cfg.Host, cfg.Epoch = "alpha3", 1+uint64(r.IntN(5))
		mod := ledgerModel{epoch: cfg.Epoch, next: make([]uint64, cpus), lastIn: make([]uint64, cpus),
			published: make([]uint64, cpus), ownDrops: make([]uint64, cpus), carried: make([]uint64, cpus),
			reported: make([]uint64, cpus), lastEnd: make([]uint64, cpus), images: map[string]int{}}
		for cpu := range cpus {
			mod.next[cpu] = 1
			if r.IntN(2) == 0 {
				cfg.FirstSeq = append(cfg.FirstSeq, 1+uint64(r.IntN(1000)))
				mod.next[cpu] = cfg.FirstSeq[cpu]
			} else {
				cfg.FirstSeq = append(cfg.FirstSeq, 0)
			}
			var carried map[string]uint64
			if r.IntN(2) == 0 {
				mod.carried[cpu] = 1 + uint64(r.IntN(500))
				carried = map[string]uint64{wire.DropCrashLost: mod.carried[cpu]}
			}
			cfg.Carried = append(cfg.Carried, carried)
		}
		im, draw := ledgerImages(r, 6)
		l, err := NewLedger(cfg, cpus, im)
		if err != nil {
			t.Fatal(err)
		}
		delivered, dropped, now := make([]uint64, cpus), make([]uint64, cpus), uint64(0)
		for step := range 300 {
			where := fmt.Sprintf("round %d step %d", round, step)
			if r.IntN(12) == 0 {
				next := mod.epoch + uint64(r.IntN(3)) // 0: refused
				c, err := l.Cut(next)
				if next <= mod.epoch {
					if err == nil || l.Epoch() != mod.epoch {
						t.Fatalf("%s: cut to %d from %d: %v, epoch now %d", where, next, mod.epoch, err, l.Epoch())
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: cut to %d: %v", where, next, err)
				}
				if c.Epoch != mod.epoch || c.Next != next || len(c.LastSeq) != cpus {
					t.Fatalf("%s: close %+v, want epoch %d next %d", where, c, mod.epoch, next)
				}
				for cpu, last := range c.LastSeq {
					if last != mod.lastIn[cpu] {
						t.Fatalf("%s: epoch %d cpu %d closed at seq %d, want %d", where, c.Epoch, cpu, last, mod.lastIn[cpu])
					}
				}
				mod.epoch, mod.lastIn = next, make([]uint64, cpus)
				continue
			}
			cpu := r.IntN(cpus)
			var entries []Entry
			var total uint64
			if r.IntN(4) != 0 {
				for range r.IntN(40) {
					e := draw()
					entries = append(entries, e)
					total += uint64(e.Count)
				}
			}
			var own uint64
			if r.IntN(5) == 0 {
				own = uint64(r.IntN(30))
			}
			dropped[cpu] += own
			delivered[cpu] += total + own + uint64(r.IntN(100)) // some still held by the driver
			now += uint64(r.IntN(1000))
			st := DriverStats{Samples: delivered[cpu], Dropped: dropped[cpu]}
			b, newImages, err := l.Drained(cpu, entries, st, now)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			for _, m := range newImages {
				mod.images[m.Image]++
				if mod.images[m.Image] > 1 {
					t.Fatalf("%s: image %s returned as new twice", where, m.Image)
				}
			}
			if total == 0 && own == 0 && mod.carried[cpu] == 0 {
				if b != nil {
					t.Fatalf("%s: a batch with nothing in it: %+v", where, b)
				}
				continue
			}
			if b == nil {
				t.Fatalf("%s: cpu %d: %d samples, %d drops, %d carried and no batch", where, cpu, total, own, mod.carried[cpu])
			}
			if _, err := b.MarshalBinary(); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if b.Host != cfg.Host || b.Epoch != mod.epoch || int(b.CPU) != cpu || b.Seq != mod.next[cpu] {
				t.Fatalf("%s: batch %s epoch %d cpu %d seq %d, want %s %d %d %d", where, b.Host, b.Epoch, b.CPU, b.Seq, cfg.Host, mod.epoch, cpu, mod.next[cpu])
			}
			if b.Total() != total || b.Start != mod.lastEnd[cpu] || b.End != now {
				t.Fatalf("%s: batch of %d samples over [%d, %d], want %d over [%d, %d]", where, b.Total(), b.Start, b.End, total, mod.lastEnd[cpu], now)
			}
			if got := b.Drops[wire.DropOverflowFull]; got != own {
				t.Fatalf("%s: %s %d, want %d", where, wire.DropOverflowFull, got, own)
			}
			if got := b.Drops[wire.DropCrashLost]; got != mod.carried[cpu] {
				t.Fatalf("%s: %s %d, want %d", where, wire.DropCrashLost, got, mod.carried[cpu])
			}
			mod.reported[cpu] += mod.carried[cpu]
			mod.carried[cpu] = 0
			mod.published[cpu] += total
			mod.ownDrops[cpu] += own
			if b.Delivered != delivered[cpu] || b.Accounted != mod.published[cpu]+mod.ownDrops[cpu] {
				t.Fatalf("%s: delivered %d accounted %d, want %d and %d", where, b.Delivered, b.Accounted, delivered[cpu], mod.published[cpu]+mod.ownDrops[cpu])
			}
			mod.lastIn[cpu], mod.lastEnd[cpu] = b.Seq, now
			mod.next[cpu]++
			mod.batches++
			mod.samples += total
		}
		for cpu := range cpus {
			if want := cfg.Carried[cpu][wire.DropCrashLost]; mod.reported[cpu] != want && mod.carried[cpu] == 0 {
				t.Fatalf("round %d cpu %d: reported %d carried, want %d", round, cpu, mod.reported[cpu], want)
			}
		}
		if st := l.Stats(); st.Batches != mod.batches || st.Samples != mod.samples || st.Images != len(mod.images) {
			t.Fatalf("round %d: stats %+v, model %d batches %d samples %d images", round, st, mod.batches, mod.samples, len(mod.images))
		}
		// What the metrics read: every CPU's last Delivered, and the
		// drops the batches carried, by name.
		var wantDelivered, wantOwn, wantReported uint64
		for cpu := range cpus {
			wantDelivered += delivered[cpu]
			wantOwn += mod.ownDrops[cpu]
			wantReported += mod.reported[cpu]
		}
		if bk := l.Booked(); bk.Delivered != wantDelivered || bk.Drops[wire.DropOverflowFull] != wantOwn || bk.Drops[wire.DropCrashLost] != wantReported {
			t.Fatalf("round %d: booked %+v, want delivered %d, %s %d, %s %d", round, bk, wantDelivered, wire.DropOverflowFull, wantOwn, wire.DropCrashLost, wantReported)
		}
	}
}

// TestLedgerRejects: bad input is an error, not a panic or a wrong batch.
func TestLedgerRejects(t *testing.T) {
	if _, err := NewLedger(DefaultConfig(), 0, NewImageMaps()); err == nil {
		t.Error("books of no CPUs")
	}
	l, err := NewLedger(DefaultConfig(), 2, NewImageMaps())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Drained(2, nil, DriverStats{}, 0); err == nil {
		t.Error("drained a CPU the host does not have")
	}
	if _, _, err := l.Drained(-1, nil, DriverStats{}, 0); err == nil {
		t.Error("drained CPU -1")
	}
	if _, _, err := l.Drained(0, nil, DriverStats{Samples: 5, Dropped: 5}, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Drained(0, nil, DriverStats{Samples: 6, Dropped: 4}, 0); err == nil {
		t.Error("driver drops going backwards were accepted")
	}
}
