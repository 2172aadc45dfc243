package timing

import "testing"

func mustWriteBuffer(t testing.TB) *WriteBuffer {
	t.Helper()
	w, err := NewWriteBuffer(6, 32, 4)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// wbStep is one store and what it should see.
type wbStep struct {
	addr, cycle uint64
	stall       uint64
	merged      bool
	len         int // entries unwritten right after it
}

func TestWriteBuffer(t *testing.T) {
	tests := []struct {
		name  string
		steps []wbStep
	}{
		{"merging", []wbStep{
			{0x100, 0, 0, false, 1}, // written at 4
			{0x108, 1, 0, true, 1},  // same 32-byte block
			{0x11f, 3, 0, true, 1},
			{0x120, 3, 0, false, 2}, // next block: behind the first, written at 8
			{0x100, 4, 0, false, 2}, // the first has been written: a new entry, at 12
			{0x104, 7, 0, true, 2},
		}},
		{"full", []wbStep{
			// Six blocks at cycle 0 are written at 4, 8, 12, 16, 20, 24.
			{0x000, 0, 0, false, 1},
			{0x020, 0, 0, false, 2},
			{0x040, 0, 0, false, 3},
			{0x060, 0, 0, false, 4},
			{0x080, 0, 0, false, 5},
			{0x0a0, 0, 0, false, 6},
			{0x0a8, 1, 0, true, 6},   // a full buffer still merges
			{0x0c0, 1, 3, false, 6},  // waits for 0x000 at 4; written at 24+4 = 28
			{0x040, 5, 0, true, 6},   // 0x040 (at 12) still takes stores
			{0x0e0, 5, 3, false, 6},  // waits for 0x020 at 8; written at 32
			{0x100, 30, 0, false, 2}, // only 0x0e0 is left; this one is written at 36
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := mustWriteBuffer(t)
			for i, s := range tt.steps {
				if got := w.Wait(s.addr, s.cycle); got != s.stall {
					t.Fatalf("step %d: Wait = %d, want %d", i, got, s.stall)
				}
				stall, merged := w.Store(s.addr, s.cycle)
				if stall != s.stall || merged != s.merged {
					t.Fatalf("step %d: store %#x at %d = (%d, %v), want (%d, %v)",
						i, s.addr, s.cycle, stall, merged, s.stall, s.merged)
				}
				if n := w.Len(s.cycle + stall); n != s.len {
					t.Fatalf("step %d: %d entries, want %d", i, n, s.len)
				}
			}
		})
	}
}

func TestWriteBufferDrain(t *testing.T) {
	w := mustWriteBuffer(t)
	for _, a := range []uint64{0x0, 0x20, 0x40} {
		w.Store(a, 0) // written at 4, 8, 12
	}
	if got := w.Drain(5); got != 7 {
		t.Errorf("Drain(5) = %d, want 7", got)
	}
	if n := w.Len(5); n != 0 {
		t.Errorf("%d entries after Drain", n)
	}
	if got := w.Drain(20); got != 0 {
		t.Errorf("Drain of an empty buffer = %d", got)
	}
	// After a drain a store starts afresh.
	w.Store(0x60, 20)
	if got := w.Drain(20); got != 4 {
		t.Errorf("Drain = %d, want 4", got)
	}
}

func TestWriteBufferFence(t *testing.T) {
	w := mustWriteBuffer(t)
	w.Store(0x100, 0)
	w.Fence()
	if _, merged := w.Store(0x108, 1); merged {
		t.Error("store merged across WMB")
	}
	if _, merged := w.Store(0x110, 2); !merged {
		t.Error("store after WMB did not merge with the one after WMB")
	}
	if w.Len(2) != 2 {
		t.Errorf("%d entries", w.Len(2))
	}
	if s := w.Stats(); s.Stores != 3 || s.Merges != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestNewWriteBufferRejects(t *testing.T) {
	for _, c := range []struct {
		n, block int
		retire   uint64
	}{{0, 32, 4}, {100, 32, 4}, {6, 24, 4}, {6, 32, 0}} {
		if _, err := NewWriteBuffer(c.n, c.block, c.retire); err == nil {
			t.Errorf("NewWriteBuffer(%d, %d, %d) accepted", c.n, c.block, c.retire)
		}
	}
}
