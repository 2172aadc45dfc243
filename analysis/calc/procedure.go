package calc

import (
	"errors"
	"fmt"

	"dcpi/analysis/cfg"
	"dcpi/analysis/cfg/cycleq"
	"dcpi/analysis/sched"
	"dcpi/hwsim/alpha"
)

// Counts are one instruction's samples per event (indexed by alpha.Event),
// summed over the selected hosts and epochs.
type Counts [alpha.NumEvents]float64

// Profile is the sampled data of one procedure.
type Profile struct {
	// Samples are the samples per instruction address; a PC with none
	// may be absent.
	Samples map[uint64]*Counts
	// Periods are each event's mean sampling period (events per sample);
	// 0 for an event that was not sampled.
	Periods [alpha.NumEvents]float64
	// MeRetired are ProfileMe's retire samples per instruction address
	// (nil without ProfileMe), and MeInterval S, the mean fetched
	// instructions per ProfileMe sample: k retire samples estimate k·S
	// executions (the ProfileMe paper, sec. 5.1).
	MeRetired  map[uint64]float64
	MeInterval float64
	// LoadLatency is value sampling's measured issue-to-data cycles of
	// each load, by address (nil without load-latency hot lists).
	LoadLatency map[uint64]Latency
}

// Latency is a load's measured latency: the mean cycles from issue to
// data over Samples value samples (Burrows et al., the loadlat module).
type Latency struct {
	Mean    float64
	Samples float64
}

// At returns pc's samples of event e (0 when none).
func (p *Profile) At(pc uint64, e alpha.Event) float64 {
	if c := p.Samples[pc]; c != nil {
		return c[e]
	}
	return 0
}

// Procedure is one procedure's static analysis: its CFG, frequency
// equivalence classes and block schedules.
type Procedure struct {
	CFG *cfg.Proc
	// Classes partitions CFG's blocks and edges (node and edge numbers as
	// in CFG; Entry and Exit are nodes too).
	Classes cycleq.Partition
	// Sched[b] is block b's static schedule; its Insns are the block's
	// instructions in order.
	Sched []*sched.Schedule
	// Pred[b] is the predecessor block scheduled before b (its state
	// carried into b), or -1 when b was scheduled from an empty pipeline.
	Pred []int
}

// StaticOptions change how NewProcedure schedules blocks.
type StaticOptions struct {
	// Model and LoadLatency are passed to the scheduler (sched.Options).
	Model       alpha.Model
	LoadLatency uint64
	// Isolated schedules every block from an empty pipeline, as DCPI did
	// ("we currently ignore all preceding blocks"). By default a block
	// with exactly one predecessor block (and no edge from Entry) is
	// scheduled after it, so the first instructions see its latencies and
	// open issue group.
	Isolated bool
}

// ErrNoCode is wrapped when a procedure has no blocks to analyze.
var ErrNoCode = errors.New("calc: procedure has no code")

// NewProcedure partitions p into frequency equivalence classes and
// schedules each of its blocks.
func NewProcedure(p *cfg.Proc, opt StaticOptions) (*Procedure, error) {
	if p == nil || len(p.Blocks) == 0 {
		return nil, ErrNoCode
	}
	g := cycleq.Graph{N: p.NumNodes(), Entry: p.Entry(), Exit: p.Exit(), Edges: make([]cycleq.Edge, len(p.Edges))}
	for i, e := range p.Edges {
		g.Edges[i] = cycleq.Edge{From: e.From, To: e.To}
	}
	part, err := cycleq.Classes(g, cycleq.Options{MissingEdges: p.MissingEdges})
	if err != nil {
		return nil, fmt.Errorf("calc: %s: %w", p.Name, err)
	}
	out := &Procedure{CFG: p, Classes: part, Sched: make([]*sched.Schedule, len(p.Blocks)), Pred: make([]int, len(p.Blocks))}
	so := sched.Options{Model: opt.Model, LoadLatency: opt.LoadLatency}
	for b := range p.Blocks {
		out.Pred[b] = -1
		o := so
		if !opt.Isolated {
			if pb := soleBlockPred(p, b); pb >= 0 {
				o.Pred = []sched.Block{blockOf(p, pb)}
				out.Pred[b] = pb
			}
		}
		s, err := sched.Of(blockOf(p, b), o)
		if err != nil {
			return nil, fmt.Errorf("calc: %s: block at %#x: %w", p.Name, p.Blocks[b].Start, err)
		}
		out.Sched[b] = s
	}
	return out, nil
}

// soleBlockPred returns b's only predecessor when it is a real block (not
// Entry) and not b itself, else -1.
func soleBlockPred(p *cfg.Proc, b int) int {
	preds := p.Blocks[b].Preds
	if len(preds) != 1 {
		return -1
	}
	from := p.Edges[preds[0]].From
	if from < 0 || from >= len(p.Blocks) || from == b {
		return -1
	}
	return from
}

func blockOf(p *cfg.Proc, b int) sched.Block {
	ins := p.BlockInsns(b)
	words := make([]uint32, len(ins))
	for i, in := range ins {
		words[i] = in.Word
	}
	return sched.Block{PC: p.Blocks[b].Start, Words: words}
}

// Insn returns the schedule entry of the instruction at pc and its block.
func (p *Procedure) Insn(pc uint64) (*sched.Insn, int, bool) {
	b, ok := p.CFG.BlockOf(pc)
	if !ok {
		return nil, -1, false
	}
	i := int((pc - p.CFG.Blocks[b].Start) / 4)
	return &p.Sched[b].Insns[i], b, true
}
