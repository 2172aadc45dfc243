package node

import (
	"testing"

	"dcpi/hwsim/alpha"
	"dcpi/node/valuemod"
)

// fakeContext is an interrupted context whose instructions are all
// ldq t0,0(sp) (a load of latency lat), until stopAt steps have been
// taken, where it gives up with why.
type fakeContext struct {
	pc, cycle, lat uint64
	steps, stopAt  int
	why            alpha.StepStop
}

const ldq = uint32(0x29)<<26 | 1<<21 | 30<<16 // ldq t0,0(sp)

func (f *fakeContext) Cycle() uint64                 { return f.cycle }
func (f *fakeContext) PC() uint64                    { return f.pc }
func (f *fakeContext) Reg(r uint8) uint64            { return uint64(r) }
func (f *fakeContext) FReg(r uint8) uint64           { return 0 }
func (f *fakeContext) Word(pc uint64) (uint32, bool) { return ldq, true }
func (f *fakeContext) Step() alpha.StepStop {
	if f.stopAt > 0 && f.steps == f.stopAt {
		return f.why
	}
	f.steps++
	f.pc += 4
	f.cycle += f.lat
	return alpha.StepDone
}

// TestValueSamplerAccounts checks the interpreter against a fake context:
// the skip is drawn and not captured, latencies are the cycles around
// each step, a run given up is counted by its reason, an interrupt
// without context as such, and a full table loses values without losing
// count of them.
func TestValueSamplerAccounts(t *testing.T) {
	cfg := ValuesConfig{Module: "loadlat", Skip: 3, Run: 4, Lists: 2, Seed: 5}
	v, err := newValueSampler(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	var steps uint64
	for range 50 {
		ctx := &fakeContext{pc: 0x1000, lat: 9}
		cost := v.interrupt(Sample{Incarnation: 1, Ctx: ctx})
		if ctx.steps < cfg.Run || ctx.steps > cfg.Skip+cfg.Run {
			t.Fatalf("%d steps: want %d to %d", ctx.steps, cfg.Run, cfg.Skip+cfg.Run)
		}
		if cost != valueSetupCycles+uint64(ctx.steps)*valueStepCycles {
			t.Fatalf("cost %d for %d steps", cost, ctx.steps)
		}
		steps += uint64(ctx.steps)
	}
	v.interrupt(Sample{Incarnation: 1, Ctx: &fakeContext{pc: 0x1000, lat: 9, stopAt: 1, why: alpha.StepPAL}})
	v.interrupt(Sample{Incarnation: 1})
	full, st := v.swap()
	if st.Interrupts != 52 || st.Completed != 50 || st.NoContext != 1 || st.GaveUp[alpha.StepPAL] != 1 {
		t.Fatalf("stats %+v", st)
	}
	if st.Steps != steps+2 {
		t.Fatalf("%d steps counted, %d taken (+2: one done and one given up)", st.Steps, steps)
	}
	// Runs start at 0x1000 and skip 0-3: captures land on 0x1000-0x1018,
	// seven PCs, of which the table (2 lists) keeps two.
	if full.n != 2 || st.TableFull == 0 || st.Values != 50*4+0 {
		t.Fatalf("%d lists, %d values lost of %d", full.n, st.TableFull, st.Values)
	}
	var kept uint64
	for i, k := range full.keys {
		if k == (valueKey{}) {
			continue
		}
		l := &full.lists[i]
		if k.kind != valuemod.KindLatency || k.inc != 1 || len(l.Entries) != 1 || l.Entries[0].Value != 9 {
			t.Fatalf("list %+v: %+v", k, l)
		}
		kept += l.N
	}
	if kept+st.TableFull != st.Values {
		t.Fatalf("%d kept + %d lost != %d offered", kept, st.TableFull, st.Values)
	}
	v.giveBack(full)
	if full.n != 0 || v.spare != full {
		t.Fatal("the drained table was not emptied and given back")
	}
	again, st2 := v.swap()
	if again.n != 0 || st2.Interrupts != 0 {
		t.Fatal("the second table was not the fresh one")
	}
}
