// Package sched is dcpicalc's static 21164 scheduler (DCPI paper sec.
// 6.1.3 and 6.3): it schedules a straight-line instruction sequence, a
// basic block, and gives for each instruction M_i, the minimum number of
// cycles it spends at the head of the issue queue when the block runs with
// no dynamic stalls (D-cache hits, branches predicted, no I-cache misses),
// and the static stalls behind M_i (slotting, a register dependency with
// its producer's PC, a busy non-pipelined unit) that dcpicalc reports as
// static culprits.
//
// The rules are hwsim's issue model (hwsim/alpha, pipeline.go), read from
// the same table, alpha.ClassOf, that the model issues from; the D-cache
// hit latency comes from hwsim/timing's parameters. For straight-line code
// without dynamic stalls the schedule is, cycle for cycle, what the model
// does; the tests hold it to that.
//
// The package owns no CFG: the caller finds the blocks (package
// analysis/cfg) and, where it wants the state that flows into a block from
// the code before it, passes that code as Options.Pred.
package sched

import (
	"errors"
	"fmt"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/timing"
)

// Block is a straight-line instruction sequence: the address of its first
// instruction and its instruction words in order.
type Block struct {
	PC    uint64
	Words []uint32
}

// Reason is why an instruction stalled statically.
type Reason uint8

// Static stall reasons (paper Fig. 4's static rows; hwsim's truth records
// the first as "slot", the dependencies as "dep", the unit as "unit").
const (
	// Slotting: the instruction could have issued with its predecessor
	// (same 16-byte issue block, a slot free) but every pipe it may use
	// was taken, or a load and a store would have issued together.
	Slotting Reason = iota
	// DepRa and DepRb: waiting for the register Ra or Rb an earlier
	// instruction (the culprit) writes. hwsim's model reads no Rc (it
	// times CMOV as reading Ra and Rb only) and has no output
	// dependencies, so there is no Rc dependency.
	DepRa
	DepRb
	// Unit: the integer multiplier or the FP divider, which are not
	// pipelined, is still busy with the culprit.
	Unit
	numReasons
)

var reasonNames = [numReasons]string{"slotting", "Ra dependency", "Rb dependency", "FU dependency"}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Stall is one static stall of an instruction.
type Stall struct {
	Cycles int
	Reason Reason
	// Culprit is the PC of the instruction responsible: the producer of
	// the register, the instruction holding the unit, or the one that
	// took the pipe (or issued the load or store) in the cycle this one
	// could not join. It may lie in Options.Pred.
	Culprit uint64
	// Reg is the register waited for (DepRa, DepRb): 0-31, FP registers
	// as 32-63.
	Reg uint8
}

// Insn is one scheduled instruction.
type Insn struct {
	PC   uint64
	Word uint32
	Op   alpha.Op
	// M is the cycles the instruction spends at the head of the issue
	// queue: 0 when it issues in the same cycle as its predecessor (dual
	// issue), 1 when in the next, more when it stalls. Issue points are
	// the instructions with M > 0.
	M int
	// Cycle is the cycle it issues in, counting the cycle before the
	// block's first instruction as 0: the sum of M up to it.
	Cycle int
	// Stalls are its static stalls; their cycles add up to M less the one
	// cycle of issue, or to M if it could have issued with its
	// predecessor.
	Stalls []Stall
}

// Schedule is the static schedule of a block.
type Schedule struct {
	Insns []Insn
	// Cycles is the block's best-case time: the sum of M.
	Cycles int
}

// Options change how a block is scheduled. The zero value schedules for
// the 21164 (EV5) with the default D-cache hit latency, from an empty
// pipeline.
type Options struct {
	// Model decodes the instruction words; the zero value means EV5.
	// Instructions of an extension the model lacks decode as invalid.
	Model alpha.Model
	// LoadLatency is the load-to-use latency of a D-cache hit; 0 means
	// hwsim/timing's default (DcacheLatency).
	LoadLatency uint64
	// Pred is the code that runs before the block, oldest first: the
	// blocks of one predecessor path (a loop's own body, for the loop
	// back edge). It is scheduled first, from an empty pipeline, so that
	// the block's first instructions see its register latencies, busy
	// units and issue slots, and a stall on a register from Pred names
	// its producer there. Without Pred the block starts in an empty
	// pipeline: its first instruction has M = 1 and waits for nothing,
	// as DCPI's scheduler assumed ("we currently ignore all preceding
	// blocks"). With several predecessors there is no one schedule; the
	// caller picks the path (or schedules once per predecessor).
	Pred []Block
}

// Errors of Schedule.
var (
	ErrEmpty    = errors.New("sched: empty block")
	ErrMisalign = errors.New("sched: instruction address not a multiple of 4")
	ErrLatency  = errors.New("sched: load latency out of range")
)

// maxLoadLatency bounds Options.LoadLatency: far beyond any memory's, and
// small enough that cycle counts stay small.
const maxLoadLatency = 1 << 16

// Of schedules block b.
func Of(b Block, opt Options) (*Schedule, error) {
	if err := check(b); err != nil {
		return nil, err
	}
	if opt.Model.Name == "" {
		opt.Model = alpha.EV5
	}
	if opt.LoadLatency == 0 {
		opt.LoadLatency = timing.DefaultParams().DcacheLatency
	}
	if opt.LoadLatency > maxLoadLatency {
		return nil, fmt.Errorf("%w: %d", ErrLatency, opt.LoadLatency)
	}
	s := newState(opt)
	for i, p := range opt.Pred {
		if err := check(p); err != nil {
			return nil, fmt.Errorf("predecessor %d: %w", i, err)
		}
		for j, w := range p.Words {
			s.step(p.PC+4*uint64(j), w, nil)
		}
	}
	out := &Schedule{Insns: make([]Insn, len(b.Words))}
	base := s.last
	for j, w := range b.Words {
		in := &out.Insns[j]
		s.step(b.PC+4*uint64(j), w, in)
		in.Cycle = int(s.last - base)
	}
	out.Cycles = int(s.last - base)
	return out, nil
}

func check(b Block) error {
	if len(b.Words) == 0 {
		return ErrEmpty
	}
	if b.PC&3 != 0 {
		return fmt.Errorf("%w: %#x", ErrMisalign, b.PC)
	}
	if b.PC+4*uint64(len(b.Words)) < b.PC {
		return fmt.Errorf("sched: block at %#x wraps the address space", b.PC)
	}
	return nil
}

// state is the issue state hwsim's Timing keeps (pipeline.go), less
// everything dynamic, plus who produced each register and who holds each
// unit, for the culprits.
type state struct {
	model    alpha.Model
	loadLat  uint64
	ready    [2][64]uint64
	producer [2][64]uint64
	last     uint64 // issue cycle of the previous instruction
	lastBlk  uint64 // its issue block
	slots    uint8
	used     alpha.Pipes
	memOp    uint8 // 1 load, 2 store issued in cycle last
	lastMem  uint64
	pipeBy   [4]uint64 // per pipe, the instruction that took it in cycle last
	unitFree [alpha.NumUnits]uint64
	unitBy   [alpha.NumUnits]uint64
}

func newState(opt Options) *state {
	return &state{model: opt.Model, loadLat: opt.LoadLatency, lastBlk: ^uint64(0)}
}

// step issues the instruction w at pc, as Timing.issue and Timing.commit
// do with a memory system where everything hits, and fills in if not nil.
func (s *state) step(pc uint64, w uint32, in *Insn) {
	d := alpha.Decode(w, s.model)
	cl := alpha.ClassOf(d.Op)
	var stalls []Stall
	raise := func(at *uint64, to uint64, r Reason, culprit uint64, reg uint8) {
		if to > *at {
			stalls = append(stalls, Stall{Cycles: int(to - *at), Reason: r, Culprit: culprit, Reg: reg})
			*at = to
		}
	}

	at := s.last + 1
	blk := pc >> alpha.IssueBlockShift
	if blk == s.lastBlk && s.slots < alpha.IssueWidth {
		at = s.last
	}
	if cl.ReadsA {
		f := b2i(cl.FPA)
		r := d.Ra & 63
		raise(&at, s.ready[f][r], DepRa, s.producer[f][r], r+32*uint8(f))
	}
	if cl.ReadsB && !d.Lit {
		f := b2i(cl.FPB)
		r := d.Rb & 63
		raise(&at, s.ready[f][r], DepRb, s.producer[f][r], r+32*uint8(f))
	}
	if cl.Unit != alpha.UnitNone {
		raise(&at, s.unitFree[cl.Unit], Unit, s.unitBy[cl.Unit], 0)
	}
	if at == s.last {
		free := cl.Pipes &^ s.used
		switch {
		case free == 0:
			raise(&at, at+1, Slotting, s.pipeCulprit(cl.Pipes), 0)
		case cl.Store && s.memOp == 1, cl.Load && s.memOp == 2:
			raise(&at, at+1, Slotting, s.lastMem, 0)
		}
	}
	lat := uint64(cl.Lat)
	if cl.Load && d.Op != alpha.OpFETCH && d.Op != alpha.OpWH64 && d.Op != alpha.OpECB {
		lat = s.loadLat
	}
	if in != nil {
		*in = Insn{PC: pc, Word: w, Op: d.Op, M: int(at - s.last), Stalls: stalls}
	}

	// Commit, as Timing.commit.
	if at == s.last && blk == s.lastBlk {
		s.slots++
	} else {
		s.slots, s.used, s.memOp = 1, 0, 0
	}
	p := (cl.Pipes &^ s.used).First()
	s.used |= p
	for i := range s.pipeBy {
		if p == 1<<i {
			s.pipeBy[i] = pc
		}
	}
	switch {
	case cl.Load:
		s.memOp, s.lastMem = 1, pc
	case cl.Store:
		s.memOp, s.lastMem = 2, pc
	}
	if cl.Unit != alpha.UnitNone {
		s.unitFree[cl.Unit] = at + uint64(cl.Busy)
		s.unitBy[cl.Unit] = pc
	}
	if cl.Writes != 0 {
		r := d.Rc
		if cl.Writes == 'a' {
			r = d.Ra
		}
		f := b2i(cl.FPDst)
		s.ready[f][r&63] = at + lat
		s.producer[f][r&63] = pc
	}
	s.last, s.lastBlk = at, blk
}

// pipeCulprit returns the last instruction that took one of the pipes in
// want in the current cycle.
func (s *state) pipeCulprit(want alpha.Pipes) uint64 {
	var pc uint64
	for i := range s.pipeBy {
		if want&s.used&(1<<i) != 0 && s.pipeBy[i] > pc {
			pc = s.pipeBy[i]
		}
	}
	return pc
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
