package oracle

import (
	"fmt"

	"dcpi/analysis/cfg"
	"dcpi/hwsim/alpha"
)

// Implied is what an image's path counts (with its partial paths) say ran:
// per-instruction executions and per-edge traversals, for the procedures
// whose every activation was followed (Clean). It exists so tests can hold
// the oracle to hwsim's per-PC ground truth.
type Implied struct {
	// Executed counts executions by instruction address.
	Executed map[uint64]uint64
	// Branches counts taken intra-procedure branches and jump-table jumps
	// by (from, to); Leaves counts transfers out of the procedure (return,
	// tail call, jump elsewhere) by the instruction that made them.
	Branches map[alpha.Edge]uint64
	Leaves   map[uint64]uint64
	// Clean are the procedures covered (entry address); Unclean the ones
	// with activations whose paths are unknown.
	Clean, Unclean map[uint64]*Proc
}

// Implied derives the counts from im's paths and partials.
func (im *Image) Implied() (*Implied, error) {
	out := &Implied{Executed: map[uint64]uint64{}, Branches: map[alpha.Edge]uint64{}, Leaves: map[uint64]uint64{},
		Clean: map[uint64]*Proc{}, Unclean: map[uint64]*Proc{}}
	for entry, p := range im.Procs {
		if p.Numbering == nil || p.Unknown > 0 {
			if p.CFG != nil {
				out.Unclean[entry] = p
			}
			continue
		}
		out.Clean[entry] = p
		for id, s := range p.Paths {
			edges, err := p.Numbering.Path(id)
			if err != nil {
				return nil, err
			}
			out.edges(p.CFG, edges, s.Count)
			blocks, err := p.Numbering.Blocks(id)
			if err != nil {
				return nil, err
			}
			for _, b := range blocks {
				out.block(p.CFG, b, p.CFG.Blocks[b].End, s.Count)
			}
		}
	}
	for _, pp := range im.Partials {
		if err := out.partial(pp, 1); err != nil {
			return nil, err
		}
	}
	for _, pp := range im.Forked {
		if err := out.partial(pp, ^uint64(0)); err != nil { // -1: the prefix ran once
			return nil, err
		}
	}
	return out, nil
}

// partial adds n (mod 2^64) times the blocks and edges of a path prefix.
func (out *Implied) partial(pp Partial, n uint64) error {
	p := pp.Proc
	if out.Clean[p.Entry] == nil {
		return nil
	}
	var edges []int
	for i, b := range pp.Blocks {
		start, end := p.CFG.Blocks[b].Start, p.CFG.Blocks[b].End
		if i == 0 && pp.From != 0 {
			if pp.From < start || pp.From >= end {
				return fmt.Errorf("oracle: %s: %s path starts at %#x outside its first block", p.Name, pp.Reason, pp.From)
			}
			start = pp.From
		}
		if i == len(pp.Blocks)-1 {
			if pp.Upto < p.CFG.Blocks[b].Start || pp.Upto > end {
				return fmt.Errorf("oracle: %s: %s path stops at %#x outside its last block", p.Name, pp.Reason, pp.Upto)
			}
			end = pp.Upto
		} else {
			e, ok := edgeBetween(p.CFG, b, pp.Blocks[i+1])
			if !ok {
				return fmt.Errorf("oracle: %s: %s path has no edge from block %d to %d", p.Name, pp.Reason, b, pp.Blocks[i+1])
			}
			edges = append(edges, e)
		}
		for pc := start; pc < end; pc += 4 {
			out.Executed[pc] += n
		}
	}
	if pp.Out >= 0 {
		edges = append(edges, pp.Out)
	}
	out.edges(p.CFG, edges, n)
	return nil
}

func (out *Implied) block(P *cfg.Proc, b int, end, n uint64) {
	for pc := P.Blocks[b].Start; pc < end; pc += 4 {
		out.Executed[pc] += n
	}
}

func (out *Implied) edges(P *cfg.Proc, edges []int, n uint64) {
	for _, e := range edges {
		E := P.Edges[e]
		if E.From == P.Entry() {
			continue
		}
		switch E.Kind {
		case cfg.Taken, cfg.JumpTable:
			if to := P.Blocks[E.To].Start; to != E.PC+4 {
				out.Branches[alpha.Edge{From: E.PC, To: to}] += n
			}
		case cfg.Return, cfg.TailCall, cfg.Outside:
			out.Leaves[E.PC] += n
		}
	}
}

func edgeBetween(P *cfg.Proc, from, to int) (int, bool) {
	for _, e := range P.Blocks[from].Succs {
		if P.Edges[e].To == to {
			return e, true
		}
	}
	return 0, false
}
