package hwsim_test

import (
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// TestSkidTruthMissloop checks the skid's ground truth on missloop (one
// load that misses the D-cache, then 192 nops), where the answer is
// known: every DMISS interrupt caused in walk is caused by its load, is
// delivered InterruptSkid cycles after the miss is counted, at the PC
// and cycle the handler was given (every interrupt is), and, the loop being periodic, at one distance
// on each core: 12 instructions on the 21164 (the nops issue two a
// cycle), further on the 21264 core (it retires the nops already done
// behind the load, up to 11 a cycle).
func TestSkidTruthMissloop(t *testing.T) {
	image, err := workloads.Binary("missloop")
	if err != nil {
		t.Fatal(err)
	}
	im, err := elfimage.Parse(image, "/bin/missloop")
	if err != nil {
		t.Fatal(err)
	}
	walk, ok := im.SymbolNamed("walk")
	if !ok {
		t.Fatal("missloop has no walk")
	}
	modes := map[string]uint64{}
	for _, model := range []alpha.Model{alpha.EV5, alpha.EV6} {
		t.Run(model.Name, func(t *testing.T) {
			cfg := machineWithWorkloads(t, 1)
			cfg.Model, cfg.SkidTruth = model, true
			col := &collector{}
			prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
				{Events: []alpha.Event{alpha.EvDMiss}, PeriodMin: 20, PeriodMax: 28}}, InterruptCycles: 214}
			m, err := hwsim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.StartProfiling(prof, col); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Spawn("/bin/missloop", []string{"/bin/missloop", "16384", "4000"}, nil); err != nil {
				t.Fatal(err)
			}
			m.Run(0)
			skids := m.Skids()[0]
			if len(skids) != len(col.samples) || len(skids) < 100 {
				t.Fatalf("%d skids for %d samples: want one per interrupt, at least 100", len(skids), len(col.samples))
			}
			var load uint64
			at := map[uint64]int{}
			user := 0
			for i, k := range skids {
				s := col.samples[i]
				if k.PC != s.PC || k.Cycle != s.Cycle || k.Kernel != s.Kernel || k.Event != alpha.EvDMiss {
					t.Fatalf("skid %d %+v: the handler was given pc %#x cycle %d kernel %v", i, k, s.PC, s.Cycle, s.Kernel)
				}
				if k.Cycles() < alpha.InterruptSkid || k.Index <= k.Cause {
					t.Fatalf("skid %d %+v: %d cycles, %d instructions: want >= %d cycles, >= 1 instruction", i, k, k.Cycles(), int64(k.Index-k.Cause), alpha.InterruptSkid)
				}
				if k.CausePC < walk.Addr || k.CausePC >= walk.Addr+walk.Size {
					continue // building the ring, or the kernel
				}
				user++
				if load == 0 {
					load = k.CausePC
				}
				if k.CausePC != load {
					t.Fatalf("skid %d caused at %#x, earlier ones at %#x: want walk's one load", i, k.CausePC, load)
				}
				if k.Cycles() != alpha.InterruptSkid {
					t.Errorf("skid %d: %d cycles, want %d (nothing defers the interrupt in walk)", i, k.Cycles(), alpha.InterruptSkid)
				}
				at[k.Instructions()]++
			}
			if user < 100 {
				t.Fatalf("%d interrupts caused in walk: want at least 100", user)
			}
			var mode uint64
			for d, n := range at {
				if n > at[mode] {
					mode = d
				}
			}
			if share := float64(at[mode]) / float64(user); share < 0.9 {
				t.Errorf("%.0f%% of %d interrupts at the commonest distance %d (%v): want a single peak, >= 90%%", 100*share, user, mode, at)
			}
			t.Logf("%s: %d interrupts caused by %#x (walk+%#x), distance %d instructions for %d of them", model.Name, user, load, load-walk.Addr, mode, at[mode])
			modes[model.Name] = mode
		})
	}
	if modes["ev5"] != 12 || modes["ev6"] <= modes["ev5"] {
		t.Errorf("peaks at %d (21164) and %d (21264 core) instructions: want 12 and further", modes["ev5"], modes["ev6"])
	}
}

// TestSkidTruthOff checks that without Config.SkidTruth nothing is
// recorded, and that a CYCLES counter, which overflows at a cycle rather
// than at an instruction, records no skid even with it.
func TestSkidTruthOff(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := machineWithWorkloads(t, 1)
		cfg.SkidTruth = on
		col := &collector{}
		m, err := hwsim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
			{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: 3000, PeriodMax: 3200}}, InterruptCycles: 214}
		if err := m.StartProfiling(prof, col); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Spawn("/bin/missloop", []string{"/bin/missloop", "1024", "500"}, nil); err != nil {
			t.Fatal(err)
		}
		m.Run(0)
		if len(col.samples) == 0 {
			t.Fatal("no CYCLES samples")
		}
		switch k := m.Skids(); {
		case !on && k != nil:
			t.Errorf("skid truth off: Skids() = %d CPUs' records, want nil", len(k))
		case on && (len(k) != 1 || len(k[0]) != 0):
			t.Errorf("CYCLES counter: Skids() = %v, want one CPU with none", k)
		}
	}
}
