package node

import (
	"fmt"
	"maps"
	"testing"

	"dcpi/internal/testrand"
	"dcpi/wire"
)

// mergeBatches is the batch a window over bs must publish: their entries,
// unknown samples and drops summed per key, over [first Start, last End),
// with the last one's Delivered and Accounted.
func mergeBatches(bs []*wire.Batch) (entries map[string]uint64, drops map[string]uint64, start, end, delivered, accounted uint64) {
	entries, drops = map[string]uint64{}, map[string]uint64{}
	for _, b := range bs {
		for _, e := range b.Entries {
			entries[fmt.Sprintf("%v/%d/%d/%d", e.Image, e.Offset, e.Event, e.PID)] += e.Count
		}
		for _, u := range b.Unknown {
			entries[fmt.Sprintf("unknown/%d/%d/%d", u.PID, u.PC, u.Event)] += u.Count
		}
		for name, d := range b.Drops {
			drops[name] += d
		}
	}
	first, last := bs[0], bs[len(bs)-1]
	return entries, drops, first.Start, last.End, last.Delivered, last.Accounted
}

// TestLedgerWindowMergesDrains runs two books side by side on the same
// random drains and cuts: one publishing a batch per drain, the other
// with a publish window that closes every window before a cut, as the
// daemon does. Each windowed batch must be exactly the per-drain batches
// of its CPU since its last one, merged: a drain lost or counted twice,
// drops not summed, a batch landing in the wrong epoch or a window left
// open past its length all fail.
func TestLedgerWindowMergesDrains(t *testing.T) {
	r := testrand.New(t)
	for round := range 20 {
		cpus := 1 + r.IntN(4)
		window := uint64(500 + r.IntN(5000))
		cfg := DefaultConfig()
		cfg.Host, cfg.Epoch = "alpha4", 1+uint64(r.IntN(5))
		for range cpus {
			var carried map[string]uint64
			if r.IntN(2) == 0 {
				carried = map[string]uint64{wire.DropCrashLost: 1 + uint64(r.IntN(500))}
			}
			cfg.Carried = append(cfg.Carried, carried)
			cfg.FirstSeq = append(cfg.FirstSeq, 1+uint64(r.IntN(3)))
		}
		im, draw := ledgerImages(r, 6)
		each, err := NewLedger(cfg, cpus, im)
		if err != nil {
			t.Fatal(err)
		}
		wcfg := cfg
		wcfg.PublishEvery = window
		win, err := NewLedger(wcfg, cpus, im)
		if err != nil {
			t.Fatal(err)
		}
		queued := make([][]*wire.Batch, cpus) // per-drain batches the window has not published yet
		nextSeq := append([]uint64(nil), cfg.FirstSeq...)
		lastEnd := make([]uint64, cpus)
		check := func(where string, cpu int, b *wire.Batch) {
			t.Helper()
			if len(queued[cpu]) == 0 {
				t.Fatalf("%s: cpu %d: window batch %d with no drain behind it", where, cpu, b.Seq)
			}
			entries, drops, start, end, delivered, accounted := mergeBatches(queued[cpu])
			got, gotDrops, _, _, _, _ := mergeBatches([]*wire.Batch{b})
			if !maps.Equal(got, entries) || !maps.Equal(gotDrops, drops) {
				t.Fatalf("%s: cpu %d: window batch %d holds %d keys %v, drains merged %d keys %v",
					where, cpu, b.Seq, len(got), gotDrops, len(entries), drops)
			}
			if b.Start != start || b.End != end || b.Delivered != delivered || b.Accounted != accounted {
				t.Fatalf("%s: cpu %d: window batch [%d, %d) delivered %d accounted %d, want [%d, %d) %d %d",
					where, cpu, b.Start, b.End, b.Delivered, b.Accounted, start, end, delivered, accounted)
			}
			for _, q := range queued[cpu] {
				if q.Epoch != b.Epoch {
					t.Fatalf("%s: cpu %d: a drain of epoch %d published in epoch %d", where, cpu, q.Epoch, b.Epoch)
				}
			}
			if b.Seq != nextSeq[cpu] || int(b.CPU) != cpu {
				t.Fatalf("%s: window batch cpu %d seq %d, want cpu %d seq %d", where, b.CPU, b.Seq, cpu, nextSeq[cpu])
			}
			if _, err := b.MarshalBinary(); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			nextSeq[cpu]++
			lastEnd[cpu] = b.End
			queued[cpu] = nil
		}
		delivered, dropped, now := make([]uint64, cpus), make([]uint64, cpus), uint64(0)
		var windowed, drained int
		for step := range 400 {
			where := fmt.Sprintf("round %d step %d", round, step)
			if r.IntN(25) == 0 {
				next := win.Epoch() + 1
				open := 0
				for cpu := range cpus {
					open += win.Windowed(cpu)
				}
				if _, err := win.Cut(next); open > 0 && err == nil {
					t.Fatalf("%s: cut with %d drains in open windows", where, open)
				} else if open == 0 && err != nil {
					t.Fatalf("%s: cut with every window closed: %v", where, err)
				}
				if open == 0 {
					if _, err := each.Cut(next); err != nil {
						t.Fatal(err)
					}
					continue
				}
				for cpu := range cpus {
					b, err := win.CloseWindow(cpu)
					if err != nil {
						t.Fatal(err)
					}
					if b != nil {
						check(where, cpu, b)
						windowed++
					}
				}
				cw, err := win.Cut(next)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				ce, err := each.Cut(next)
				if err != nil {
					t.Fatal(err)
				}
				// The per-drain books name their last batch of the epoch;
				// the windowed books name theirs, which merged it.
				for cpu := range cpus {
					if (cw.LastSeq[cpu] == 0) != (ce.LastSeq[cpu] == 0) {
						t.Fatalf("%s: cpu %d closed epoch at %d windowed, %d per drain", where, cpu, cw.LastSeq[cpu], ce.LastSeq[cpu])
					}
				}
				continue
			}
			cpu := r.IntN(cpus)
			var entries []Entry
			if r.IntN(4) != 0 {
				for range r.IntN(40) {
					entries = append(entries, draw())
				}
			}
			var total uint64
			for _, e := range entries {
				total += uint64(e.Count)
			}
			if r.IntN(5) == 0 {
				dropped[cpu] += uint64(r.IntN(30))
			}
			delivered[cpu] += total + uint64(r.IntN(100))
			now += uint64(r.IntN(1000))
			st := DriverStats{Samples: delivered[cpu] + dropped[cpu], Dropped: dropped[cpu]}
			be, _, err := each.Drained(cpu, entries, st, now)
			if err != nil {
				t.Fatal(err)
			}
			if be != nil {
				queued[cpu] = append(queued[cpu], be)
				drained++
			}
			bw, _, err := win.Drained(cpu, entries, st, now)
			if err != nil {
				t.Fatal(err)
			}
			if bw != nil {
				if now-lastEnd[cpu] < window {
					t.Fatalf("%s: cpu %d published after %d cycles of a %d window", where, cpu, now-lastEnd[cpu], window)
				}
				check(where, cpu, bw)
				windowed++
			} else if len(queued[cpu]) > 0 && now-lastEnd[cpu] >= window {
				t.Fatalf("%s: cpu %d window open %d cycles, past its %d", where, cpu, now-lastEnd[cpu], window)
			}
		}
		for cpu := range cpus {
			b, err := win.CloseWindow(cpu)
			if err != nil {
				t.Fatal(err)
			}
			if b != nil {
				check("end", cpu, b)
				windowed++
			}
			if len(queued[cpu]) != 0 {
				t.Fatalf("round %d: cpu %d: %d drains never published", round, cpu, len(queued[cpu]))
			}
		}
		se, sw := each.Stats(), win.Stats()
		if se.Samples != sw.Samples || sw.Batches != uint64(windowed) || se.Batches != uint64(drained) {
			t.Fatalf("round %d: per drain %+v, windowed %+v", round, se, sw)
		}
		if windowed >= drained && drained > 20 {
			t.Fatalf("round %d: the window merged nothing: %d batches for %d drains", round, windowed, drained)
		}
		if !maps.Equal(each.Booked().Drops, win.Booked().Drops) {
			t.Fatalf("round %d: drops booked %v per drain, %v windowed", round, each.Booked().Drops, win.Booked().Drops)
		}
	}
}

// TestLedgerCutRefusesOpenWindow: cutting with a window open would
// publish drains of the epoch left into the next one.
func TestLedgerCutRefusesOpenWindow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PublishEvery = 1000
	im, draw := ledgerImages(testrand.New(t), 2)
	l, err := NewLedger(cfg, 1, im)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := l.Drained(0, []Entry{draw()}, DriverStats{Samples: 100}, 10)
	if err != nil || b != nil {
		t.Fatalf("first drain in the window: batch %v, %v", b, err)
	}
	if l.Windowed(0) != 1 {
		t.Fatalf("windowed %d drains, want 1", l.Windowed(0))
	}
	if _, err := l.Cut(2); err == nil || l.Epoch() != 1 {
		t.Fatalf("cut with an open window: %v, epoch %d", err, l.Epoch())
	}
	if b, err = l.CloseWindow(0); err != nil || b == nil || b.Epoch != 1 {
		t.Fatalf("close: %v, %v", b, err)
	}
	c, err := l.Cut(2)
	if err != nil || c.LastSeq[0] != b.Seq {
		t.Fatalf("cut after closing: %+v, %v", c, err)
	}
	if _, err := l.CloseWindow(1); err == nil {
		t.Fatal("closing the window of a CPU the books do not keep")
	}
}
