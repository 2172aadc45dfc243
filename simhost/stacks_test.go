package simhost

import (
	"slices"
	"testing"

	"dcpi/internal/racedetect"
	"dcpi/node"
	"dcpi/wire"
)

// TestStackConservation runs a workload mix with stacks on, with stack
// tables and buffers small enough to evict and drop, and requires every
// sample the hardware delivered to be in exactly one published stack or in
// a stack drop counter, besides the flat profile's own conservation; the
// stacks must be canonical, their images recorded, and the batches
// without stacks still of version 2. The batches come back through their
// wire encoding (MemPublisher), so what the daemon builds must validate
// and round-trip.
func TestStackConservation(t *testing.T) {
	// Under the race detector the host's goroutines race with stacks on
	// for a part of the run; the plain run takes it to the end.
	limit := uint64(0)
	if racedetect.Enabled {
		limit = 10_000_000
	}
	names := []string{"ccdriver", "recurse", "interp", "sort"}
	m := workloadMachine(t, 2, true, names...)
	ncfg := busyDriverConfig()
	ncfg.Node.Driver.Stacks = node.StackConfig{Entries: 64, BufferEntries: 16, Depth: wire.MaxStackFrames}
	h, pub := runWorkloads(t, m, ncfg, limit, names...)
	delivered := h.Generated()
	var flat, flatDrops, stacks, stackDrops, truncated, frames uint64
	v2, v3 := 0, 0
	images := pub.Images()
	for _, b := range pub.Batches() {
		flat += b.Total()
		for _, d := range b.Drops {
			flatDrops += d
		}
		for _, d := range b.StackDrops {
			stackDrops += d
		}
		stacks += b.StackTotal()
		switch {
		case len(b.Stacks) > 0 || len(b.StackDrops) > 0:
			if b.Version != wire.StackVersion {
				t.Fatalf("batch with stacks of version %d", b.Version)
			}
			v3++
		case b.Version != wire.FlatVersion:
			t.Fatalf("batch without stacks of version %d", b.Version)
		default:
			v2++
		}
		for i, s := range b.Stacks {
			if i > 0 && compareStacks(b.Stacks[i-1], s) >= 0 {
				t.Fatalf("stacks %d and %d out of canonical order", i-1, i)
			}
			if len(s.Frames) == 0 || len(s.Frames) > wire.MaxStackFrames || s.Count == 0 {
				t.Fatalf("bad stack %+v", s)
			}
			for _, f := range s.Frames {
				if f.Image != (wire.ImageKey{}) && images[f.Image] == nil {
					t.Fatalf("stack frame names image %v with no record", f.Image)
				}
			}
			frames += uint64(len(s.Frames)) * s.Count
			if s.Truncated {
				truncated += s.Count
			}
		}
	}
	_, drivers := h.Node().Stats()
	var st node.DriverStats
	for _, d := range drivers {
		st.Add(d)
	}
	timing := h.Node().HandlerTiming()
	t.Logf("delivered %d: flat %d + %d dropped; stacks %d + %d dropped (%d truncated, %.1f frames a sample); %d batches of version 2, %d of 3",
		delivered, flat, flatDrops, stacks, stackDrops, truncated, float64(frames)/float64(stacks), v2, v3)
	t.Logf("modelled handler cycles a sample: flat %.0f, stack side %.0f more (%.1f reads, %.2f heuristic frames a sample); host ns (median): flat hit %.0f, stack side %.0f",
		float64(st.CyclesHit+st.CyclesMiss+st.CyclesDirect)/float64(st.Samples), float64(st.CyclesStack)/float64(st.StackSamples),
		float64(st.StackReads)/float64(st.StackSamples), float64(st.StackHeuristic)/float64(st.StackSamples),
		timing.MedianHitNanos, timing.MedianStackNanos)
	if delivered == 0 || flat+flatDrops != delivered {
		t.Fatalf("flat conservation: %d + %d dropped != %d delivered", flat, flatDrops, delivered)
	}
	if stacks+stackDrops != delivered {
		t.Fatalf("stack conservation: %d + %d dropped != %d delivered", stacks, stackDrops, delivered)
	}
	if st.StackEvictions == 0 || v3 == 0 {
		t.Fatalf("no stack evictions (%d) or no stack batches (%d)", st.StackEvictions, v3)
	}
	if truncated*2 > stacks {
		t.Errorf("%d of %d stacks truncated", truncated, stacks)
	}
}

// compareStacks is wire's canonical stack order, for the test.
func compareStacks(a, b wire.StackEntry) int {
	switch {
	case a.PID != b.PID:
		return cmpU(uint64(a.PID), uint64(b.PID))
	case a.Event != b.Event:
		return cmpU(uint64(a.Event), uint64(b.Event))
	}
	if c := slices.CompareFunc(a.Frames, b.Frames, wire.CompareFrames); c != 0 {
		return c
	}
	switch {
	case a.Truncated == b.Truncated:
		return 0
	case !a.Truncated:
		return -1
	}
	return 1
}

func cmpU(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}
