package node

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// syntheticTrace is a deterministic trace shaped like a profile: per CPU,
// a few processes, each with a hot loop (a few dozen PCs sampled often) and
// a long tail of code sampled rarely, and now and then a new process.
func syntheticTrace(cpus, n int, seed uint64) *Trace {
	rng := rand.New(rand.NewPCG(seed, 5))
	t := &Trace{CPUs: cpus}
	inc := make([]uint32, cpus)
	for c := range inc {
		inc[c] = uint32(100 * (c + 1))
	}
	for range n {
		c := rng.IntN(cpus)
		if rng.IntN(3000) == 0 {
			inc[c] += 7 // a new process on this CPU
		}
		p := inc[c] + uint32(rng.IntN(3))
		var pc uint64
		if rng.IntN(10) < 7 {
			pc = 0x120000000 + uint64(rng.IntN(48))*4 // the hot loop
		} else {
			pc = 0x120001000 + uint64(rng.ExpFloat64()*800)*4 // the tail
		}
		ev := uint8(0)
		if rng.IntN(8) == 0 {
			ev = 2
		}
		t.Samples = append(t.Samples, TraceSample{CPU: c, PID: p, Incarnation: p, PC: pc, Event: ev})
	}
	return t
}

// TestSimulate replays a synthetic trace against the default designs and
// at small sizes: every sample is accounted for, no design misses less
// than the compulsory floor, a larger table of the same kind misses no
// more, and the costs add up.
func TestSimulate(t *testing.T) {
	tr := syntheticTrace(2, 60000, 1)
	floor := float64(CompulsoryMisses(tr)) / float64(len(tr.Samples))
	designs := Designs([]int{8, 32, 256, 4096}, DefaultVariants())
	rs, err := Simulate(tr, designs)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[DesignVariant][]Result{}
	for _, r := range rs {
		c := r.Design.Config
		if r.Samples != uint64(len(tr.Samples)) || r.Hits+r.Misses != r.Samples || r.Dropped != 0 {
			t.Errorf("%s: %+v", r.Design.Name, r)
		}
		if r.MissRate() < floor {
			t.Errorf("%s: miss rate %.4f below the compulsory floor %.4f", r.Design.Name, r.MissRate(), floor)
		}
		if r.EntriesOut < r.Evictions || r.Aggregation() < 1 {
			t.Errorf("%s: %d entries out, %d evictions", r.Design.Name, r.EntriesOut, r.Evictions)
		}
		cm := c.Cost
		if r.TotalCycles() != r.HandlerCycles+cm.Delivery*r.Samples+cm.Daemon*r.EntriesOut {
			t.Errorf("%s: total cycles do not add up", r.Design.Name)
		}
		k := DesignVariant{c.Assoc, c.Policy}
		byKind[k] = append(byKind[k], r)
	}
	for k, sizes := range byKind {
		for i := 1; i < len(sizes); i++ {
			if sizes[i].Misses > sizes[i-1].Misses {
				t.Errorf("%v: %s misses %d, more than %s's %d", k, sizes[i].Design.Name, sizes[i].Misses,
					sizes[i-1].Design.Name, sizes[i-1].Misses)
			}
		}
	}
	var out bytes.Buffer
	if err := WriteResults(&out, rs); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "tablesim.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestSimulate -update writes it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("results differ from %s (-update rewrites it):\n%s", golden, out.Bytes())
	}
}

// TestSwapToFrontKeepsHotEntry is the case sec. 5.4's policy is for: one
// bucket, a hot key between runs of keys seen once. Round-robin evicts the
// hot key whenever the counter comes round to it; swap-to-front keeps it
// at the front, so only the keys seen once miss.
func TestSwapToFrontKeepsHotEntry(t *testing.T) {
	tr := &Trace{CPUs: 1}
	for i := range 4000 {
		tr.Samples = append(tr.Samples,
			TraceSample{PID: 1, Incarnation: 1, PC: 0x1000},
			TraceSample{PID: 1, Incarnation: 1, PC: 0x2000 + uint64(i)*4})
	}
	var ds []Design
	for _, p := range []Policy{RoundRobin, SwapToFront} {
		cfg := DefaultDriverConfig()
		cfg.TableEntries, cfg.Policy = 4, p
		ds = append(ds, Design{Name: p.String(), Config: cfg})
	}
	rs, err := Simulate(tr, ds)
	if err != nil {
		t.Fatal(err)
	}
	rr, stf := rs[0], rs[1]
	if stf.Misses != 4001 {
		t.Errorf("swap-to-front: %d misses, want 4001 (the cold keys and the hot key's first)", stf.Misses)
	}
	if rr.Misses < 4500 {
		t.Errorf("round-robin: %d misses, want the hot key evicted about every other round", rr.Misses)
	}
	t.Logf("round-robin %d misses, swap-to-front %d", rr.Misses, stf.Misses)
}

func TestSimulateRejects(t *testing.T) {
	bad := DefaultDriverConfig()
	bad.Assoc = 5
	if _, err := Simulate(&Trace{CPUs: 1}, []Design{{Name: "bad", Config: bad}}); err == nil {
		t.Error("simulated an invalid design")
	}
	if _, err := Simulate(&Trace{CPUs: 1, Samples: []TraceSample{{CPU: 1}}}, DefaultDesigns()); err == nil {
		t.Error("simulated a sample of a CPU the trace does not have")
	}
}

// TestDesignsSameMemory checks that the designs of one size use the same
// table memory on the modelled Alpha: 4-way 16 bytes an entry, 6-way
// packed six to a line, 8-way two lines a bucket.
func TestDesignsSameMemory(t *testing.T) {
	want := map[int]int{4: 16384, 6: 24576, 8: 16384}
	for _, d := range Designs([]int{4096}, DefaultVariants()) {
		if got := tableBytes(d.Config); got != 256<<10 || d.Config.TableEntries != want[d.Config.Assoc] {
			t.Errorf("%s: %d entries, %d bytes", d.Name, d.Config.TableEntries, got)
		}
	}
}
