package node

import (
	"fmt"
	"math/rand/v2"

	"dcpi/hwsim/alpha"
	"dcpi/internal/hotlist"
	"dcpi/node/valuemod"
)

// Value sampling (Burrows et al.): at each counter interrupt in
// user mode the handler interprets a short run of the interrupted context
// (Context.Step really executes each instruction, once), captures what the
// selected customization module asks for, and offers each value to the
// Gibbons-Matias hot list (internal/hotlist) of its (process incarnation,
// PC, value type) in the CPU's value table. The table is the CPU's alone,
// like the sample table: the handler takes no lock and allocates nothing
// once the table is built; the daemon takes the filled table by IPI and
// hands back an empty one (drainValues in values_daemon.go).

// Context is the interrupted user context, as the interpreter sees it
// (hwsim.Interrupted implements it on the simulated host). Step executes
// the next instruction to completion and returns alpha.StepDone, or why it
// executed nothing (a PAL call, a fault, a trap, a locked sequence);
// Cycle is the cycle counter.
type Context interface {
	Cycle() uint64
	PC() uint64
	Reg(r uint8) uint64
	FReg(r uint8) uint64
	Word(pc uint64) (uint32, bool)
	Step() alpha.StepStop
}

// ValuesConfig turns value sampling on (Module not empty) and sets its
// parameters. The paper's text lost its digits; these are chosen and
// documented in docs/values.md.
type ValuesConfig struct {
	// Module names the customization module (valuemod.Names()).
	Module string
	// Skip: before capturing, the interpreter runs a number of
	// instructions drawn uniformly from [0, Skip], so that runs do not
	// all start at the PCs where interrupts land (the microarchitecture
	// skews them: the bias the paper removes the same way).
	Skip int
	// Run is the number of instructions captured after the skip.
	Run int
	// Lists is the number of hot lists each CPU's table holds.
	Lists int
	// Seed seeds each CPU's coin tosses (with the CPU number), so a run
	// stays a function of its seeds.
	Seed uint64
	// FirstSeq is the Seq of the host's first value record (0: 1). A
	// restarted daemon continues after what its predecessor published,
	// or the database would take its records for redeliveries.
	FirstSeq uint64
}

// Interpreter costs, in cycles of the 21164, charged on top of the
// interrupt's: setting up the interpreter (saving the context where it
// can read it, choosing the run) and interpreting one instruction
// (fetch, decode, dispatch, operand reads, write-back, in software). The
// instruction's own execution time is charged by the host as it steps.
const (
	valueSetupCycles = 400
	valueStepCycles  = 120
)

// DefaultValuesConfig is value sampling with module, runs of 0-63 skipped
// and 8 captured instructions, and 1024 hot lists per CPU (two tables of
// about 400 KB each). A skip of 0-7 left the capture mostly on the
// instruction after the stall the interrupt landed on (stream's sum load
// measured 0.90 D-cache hits against a truth of 0.50, 0.50 with 0-63); 63
// costs 8.9% against plain sampling, the paper's about 10%
// (docs/values.md).
func DefaultValuesConfig(module string) ValuesConfig {
	return ValuesConfig{Module: module, Skip: 63, Run: 8, Lists: 1024, Seed: 1}
}

// Validate reports the first problem with c (an unknown module lists the
// known ones).
func (c ValuesConfig) Validate() error {
	if c.Module == "" {
		return nil
	}
	if _, err := valuemod.Lookup(c.Module); err != nil {
		return err
	}
	switch {
	case c.Skip < 0 || c.Skip > 1024:
		return fmt.Errorf("node: values: skip %d: want 0 to 1024", c.Skip)
	case c.Run < 1 || c.Run > 1024:
		return fmt.Errorf("node: values: run %d: want 1 to 1024", c.Run)
	case c.Lists < 1 || c.Lists > 1<<20:
		return fmt.Errorf("node: values: %d lists: want 1 to %d", c.Lists, 1<<20)
	}
	return nil
}

// ValueStats is one CPU's interpreter accounting: every interrupt is
// NoContext, Completed or given up for one reason (GaveUp, by
// alpha.StepStop).
type ValueStats struct {
	Interrupts, NoContext, Completed uint64
	GaveUp                           [8]uint64
	Steps, Values, TableFull         uint64
}

// valueKey names one hot list in a CPU's table.
type valueKey struct {
	inc  uint32
	kind valuemod.Kind
	pc   uint64
}

// valueTable is a fixed-capacity open-addressing map from valueKey to a
// hot list, built once, so that the handler never allocates.
type valueTable struct {
	keys    []valueKey // zero key: free (incarnation 0 is idle, never sampled here)
	lists   []hotlist.List
	backing []hotlist.Entry // max lists of M+1 entries, handed out in order of use
	n       int             // lists in use
	max     int
}

func newValueTable(lists int) *valueTable {
	size := 1
	for size < 2*lists {
		size <<= 1
	}
	return &valueTable{keys: make([]valueKey, size), lists: make([]hotlist.List, size),
		backing: make([]hotlist.Entry, lists*(hotlist.M+1)), max: lists}
}

// list returns k's list, adding it if there is room; nil if the table is
// full.
func (t *valueTable) list(k valueKey) *hotlist.List {
	mask := uint64(len(t.keys) - 1)
	h := (k.pc>>2 ^ uint64(k.inc)*0x9e3779b97f4a7c15 ^ uint64(k.kind)<<56) * 0xff51afd7ed558ccd
	for i := h >> 11 & mask; ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			return &t.lists[i]
		case valueKey{}:
			if t.n == t.max {
				return nil
			}
			t.keys[i] = k
			const w = hotlist.M + 1
			t.lists[i] = hotlist.List{Entries: t.backing[t.n*w : t.n*w : (t.n+1)*w]}
			t.n++
			return &t.lists[i]
		}
	}
}

// reset empties t, keeping its memory.
func (t *valueTable) reset() {
	for i := range t.keys {
		if t.keys[i] != (valueKey{}) {
			t.keys[i] = valueKey{}
			t.lists[i] = hotlist.List{}
		}
	}
	t.n = 0
}

// memoryBytes is t's memory: keys (16 bytes), list headers (40) and
// entries (16 each).
func (t *valueTable) memoryBytes() int {
	return len(t.keys)*(16+40) + len(t.backing)*16
}

// valueSampler is one CPU's interpreter and value tables: the active one
// the handler fills and the one the daemon has taken.
type valueSampler struct {
	mod     *valuemod.Module
	cfg     ValuesConfig
	coins   *rand.PCG
	active  *valueTable
	spare   *valueTable
	stats   ValueStats
	run     []valuemod.Tuple
	inc     uint32 // the incarnation being sampled, for offer
	offerFn func(valuemod.Value)
}

func newValueSampler(cfg ValuesConfig, cpu int) (*valueSampler, error) {
	mod, err := valuemod.Lookup(cfg.Module)
	if err != nil {
		return nil, err
	}
	v := &valueSampler{mod: mod, cfg: cfg, coins: rand.NewPCG(cfg.Seed, uint64(cpu)+0x7a1),
		active: newValueTable(cfg.Lists), spare: newValueTable(cfg.Lists),
		run: make([]valuemod.Tuple, 0, cfg.Run)}
	v.offerFn = v.offer
	return v, nil
}

// interrupt interprets a run of s's context and returns its cost in
// cycles beyond the instructions' own.
func (v *valueSampler) interrupt(s Sample) uint64 {
	v.stats.Interrupts++
	ctx := s.Ctx
	if ctx == nil {
		v.stats.NoContext++
		return 0
	}
	skip := 0
	if v.cfg.Skip > 0 {
		skip = int(v.coins.Uint64() % uint64(v.cfg.Skip+1))
	}
	v.run = v.run[:0]
	steps := 0
	why := alpha.StepDone
	for i := 0; i < skip+v.cfg.Run; i++ {
		pc := ctx.PC()
		var t valuemod.Tuple
		var d alpha.Decoded
		var capture valuemod.Capture
		if i >= skip {
			if w, ok := ctx.Word(pc); ok {
				d = alpha.Decode(w, alpha.EV67)
				cl := alpha.ClassOf(d.Op)
				capture = v.mod.Spec(d.Op, cl)
				if d.Lit {
					capture &^= valuemod.CapOperandB
				}
				t = valuemod.Tuple{PC: pc, Word: w, Op: d.Op, Got: capture}
				if capture&valuemod.CapOperandA != 0 {
					t.A = v.reg(ctx, d.Ra, cl.FPA)
				}
				if capture&valuemod.CapOperandB != 0 {
					t.B = v.reg(ctx, d.Rb, cl.FPB)
				}
				if capture&valuemod.CapAddress != 0 {
					t.Address = uint64(d.Imm) + ctx.Reg(d.Rb)
				}
			}
		}
		before := ctx.Cycle()
		steps++
		if why = ctx.Step(); why != alpha.StepDone {
			break
		}
		if capture == 0 {
			continue
		}
		if capture&valuemod.CapLatency != 0 {
			t.Latency = ctx.Cycle() - before
		}
		if capture&valuemod.CapResult != 0 {
			cl := alpha.ClassOf(d.Op)
			r := d.Rc
			if cl.Writes == 'a' {
				r = d.Ra
			}
			t.Result = v.reg(ctx, r, cl.FPDst)
		}
		v.run = append(v.run, t)
	}
	v.stats.Steps += uint64(steps)
	if why == alpha.StepDone {
		v.stats.Completed++
	} else {
		v.stats.GaveUp[why&7]++
	}
	v.inc = s.Incarnation
	v.mod.Emit(v.run, v.offerFn)
	return valueSetupCycles + uint64(steps)*valueStepCycles
}

func (v *valueSampler) reg(ctx Context, r uint8, fp bool) uint64 {
	if fp {
		return ctx.FReg(r)
	}
	return ctx.Reg(r)
}

// offer counts one value in its hot list.
func (v *valueSampler) offer(x valuemod.Value) {
	v.stats.Values++
	l := v.active.list(valueKey{inc: v.inc, kind: x.Kind, pc: x.PC})
	if l == nil {
		v.stats.TableFull++
		return
	}
	l.Offer(x.V, v.coins)
}

// swap hands the daemon the filled table and the CPU's counters, and
// starts an empty one: run on the CPU, in an IPI.
func (v *valueSampler) swap() (*valueTable, ValueStats) {
	full := v.active
	v.active, v.spare = v.spare, nil
	st := v.stats
	v.stats = ValueStats{}
	return full, st
}

// giveBack returns a drained table for the next swap: daemon side, after
// the swap's IPI; the handler never touches spare.
func (v *valueSampler) giveBack(t *valueTable) {
	t.reset()
	v.spare = t
}
