package calc

import (
	"dcpi/analysis/cfg"
	"dcpi/hwsim/alpha"
)

// Transfers are measured executions in the form hwsim's ground truth
// gives them (docs/groundtruth.md): each instruction's executions, and the
// control transfers taken whose next PC is not the instruction after.
// Nothing in the estimator reads them; they are for accuracy reports.
type Transfers struct {
	// Executed returns how often the instruction at pc executed.
	Executed func(pc uint64) uint64
	// Taken returns the transfers from the instruction at from, by
	// target (nil when none).
	Taken func(from uint64) map[uint64]uint64
}

// EdgeCounts derives the execution count of each of p's CFG edges from
// t, the paper's dcpix edge counts (Figure 9). ok[e] is false where the
// measurement cannot tell (a Halt edge, or a block ending in a CALL_PAL,
// which the truth does not count as executed). With l a block's last
// instruction and fall(l) = Executed(l) − Σ Taken(l), its executions that
// went on to l+4:
//
//   - an edge into a block starting at l+4 (a fall-through, or a branch or
//     jump table entry to the next instruction, which the truth cannot tell
//     apart from one) is fall(l); after a call (bsr, jsr ending the block)
//     it is Executed(l), the callee having returned, or 0 for a call that
//     never returns;
//   - any other edge to a block inside p, Taken or JumpTable, is
//     Taken(l)[its start];
//   - an edge to Exit (Return, TailCall, Outside, FallOut: at most one per
//     block) is every transfer from l that leaves p, plus fall(l) when l is
//     p's last instruction;
//   - an Entry edge is its block's first instruction's executions less the
//     counts of its in-edges from blocks (clamped at 0): control that came
//     from outside, a call or the kernel at exec.
func EdgeCounts(p *cfg.Proc, t Transfers) (n []uint64, ok []bool) {
	n, ok = make([]uint64, len(p.Edges)), make([]bool, len(p.Edges))
	calls := map[uint64]bool{}
	noReturn := map[uint64]bool{}
	for _, c := range p.Calls {
		calls[c.PC] = true
		noReturn[c.PC] = c.NoReturn
	}
	taken := func(from uint64) (inside map[uint64]uint64, out, all uint64) {
		m := t.Taken(from)
		for to, c := range m {
			all += c
			if to < p.Start || to >= p.End {
				out += c
			}
		}
		return m, out, all
	}
	entry, exit := p.Entry(), p.Exit()
	for e, ed := range p.Edges {
		if ed.From == entry || ed.Kind == cfg.Halt {
			continue
		}
		l := p.Blocks[ed.From].End - 4
		if in, found := p.Insn(l); found && in.Dec.Op == alpha.OpCallPal {
			continue
		}
		exec := t.Executed(l)
		m, out, all := taken(l)
		fall := exec - min(all, exec)
		switch {
		case ed.To == exit && calls[l]: // FallOut after a call
			if !noReturn[l] {
				n[e] = exec
			}
		case ed.To == exit:
			n[e] = out
			if l+4 >= p.End {
				n[e] += fall
			}
		case p.Blocks[ed.To].Start == l+4:
			switch {
			case noReturn[l]:
				n[e] = 0
			case calls[l]:
				n[e] = exec
			default:
				n[e] = fall
			}
		default:
			n[e] = m[p.Blocks[ed.To].Start]
		}
		ok[e] = true
	}
	for e, ed := range p.Edges {
		if ed.From != entry {
			continue
		}
		var from uint64
		for _, pe := range p.Blocks[ed.To].Preds {
			if p.Edges[pe].From != entry {
				from += n[pe]
			}
		}
		x := t.Executed(p.Blocks[ed.To].Start)
		n[e], ok[e] = x-min(from, x), true
	}
	return n, ok
}

// TruthTransfers adapts hwsim's ground truth of one image to Transfers.
// For accuracy reports only: no estimator may read the truth.
func TruthTransfers(g *alpha.GroundTruth) Transfers {
	from := map[uint64]map[uint64]uint64{}
	for e, c := range g.Edges {
		m := from[e.From]
		if m == nil {
			m = map[uint64]uint64{}
			from[e.From] = m
		}
		m[e.To] += c
	}
	return Transfers{
		Executed: func(pc uint64) uint64 {
			if t := g.PCs[pc]; t != nil {
				return t.Executed
			}
			return 0
		},
		Taken: func(pc uint64) map[uint64]uint64 { return from[pc] },
	}
}

// MeasuredFrom returns the Measured of procedure p from t: instruction
// executions, and p's edges as EdgeCounts derives them.
func MeasuredFrom(p *cfg.Proc, t Transfers) Measured {
	n, ok := EdgeCounts(p, t)
	return Measured{
		Executed: t.Executed,
		Edge: func(e int) (uint64, bool) {
			if e < 0 || e >= len(n) {
				return 0, false
			}
			return n[e], ok[e]
		},
	}
}
