package cfg

import (
	"fmt"
	"slices"

	"dcpi/hwsim/alpha"
)

// ctl is how an instruction transfers control.
type ctl uint8

const (
	ctlNone ctl = iota // falls through (including br to the next instruction)
	ctlCond            // conditional branch
	ctlBr              // unconditional br elsewhere
	ctlCall            // bsr or jsr
	ctlRet             // ret, rti, retsys
	ctlJmp             // jmp (and jsr_coroutine is a call)
	ctlHalt            // halt, or a word that does not decode
)

// PAL functions that do not fall through.
const (
	palHalt   = 0x00
	palRetsys = 0x3d
	palRti    = 0x3f
)

// Jump kinds in bits 14-15 of a jump's function field.
const (
	jkJmp = iota
	jkJsr
	jkRet
	jkCoroutine
)

func classify(in Insn) (ctl, uint64) {
	d := in.Dec
	switch d.Op {
	case alpha.OpInvalid:
		return ctlHalt, 0
	case alpha.OpCallPal:
		switch d.Imm {
		case palHalt:
			return ctlHalt, 0
		case palRetsys, palRti:
			return ctlRet, 0
		}
		return ctlNone, 0
	case alpha.OpJMP:
		switch (d.Imm >> 14) & 3 {
		case jkRet:
			return ctlRet, 0
		case jkJmp:
			return ctlJmp, 0
		}
		return ctlCall, 0
	case alpha.OpBR:
		t := in.PC + 4 + uint64(int64(d.Imm))
		if in.Word>>26 == 0x34 {
			return ctlCall, t
		}
		if t == in.PC+4 {
			return ctlNone, t
		}
		return ctlBr, t
	case alpha.OpBEQ, alpha.OpBNE, alpha.OpBLT, alpha.OpBLE, alpha.OpBGT, alpha.OpBGE,
		alpha.OpBLBC, alpha.OpBLBS, alpha.OpFBEQ, alpha.OpFBNE, alpha.OpFBLT, alpha.OpFBLE,
		alpha.OpFBGT, alpha.OpFBGE:
		return ctlCond, in.PC + 4 + uint64(int64(d.Imm))
	}
	return ctlNone, 0
}

type builder struct {
	c     *Code
	p     *Proc
	kind  []ctl
	tgt   []uint64
	isEnt []bool // instruction index starts an entry
	// resolved holds each jmp's findings, by instruction index.
	resolved map[int]*Jump
}

// maxRounds bounds the rebuild-and-resolve iteration: each round can only
// add jump-table targets, which a procedure has few sources of.
const maxRounds = 8

func (b *builder) build() {
	p := b.p
	n := len(p.Insns)
	b.kind = make([]ctl, n)
	b.tgt = make([]uint64, n)
	b.isEnt = make([]bool, n)
	for i, in := range p.Insns {
		b.kind[i], b.tgt[i] = classify(in)
	}
	for _, e := range p.Entries {
		b.isEnt[(e-p.Start)/4] = true
	}
	b.resolved = map[int]*Jump{}
	var vals *values
	for round := 0; ; round++ {
		b.shape()
		vals = analyze(b)
		changed := b.resolve(vals)
		if !changed || round == maxRounds {
			break
		}
	}
	b.finish(vals)
}

func (b *builder) inside(t uint64) bool { return t >= b.p.Start && t < b.p.End }

// shape cuts the instructions into blocks and adds the edges, from the
// current jump resolutions.
func (b *builder) shape() {
	p := b.p
	n := len(p.Insns)
	leader := make([]bool, n+1)
	leader[0] = true
	for i := range p.Insns {
		if b.isEnt[i] {
			leader[i] = true
		}
		switch b.kind[i] {
		case ctlCond, ctlBr:
			if b.inside(b.tgt[i]) {
				leader[(b.tgt[i]-p.Start)/4] = true
			}
			leader[i+1] = true
		case ctlRet, ctlJmp, ctlHalt:
			leader[i+1] = true
		case ctlCall:
			if b.c.opt.SplitAtCalls {
				leader[i+1] = true
			}
		}
		if j := b.resolved[i]; j != nil {
			for _, t := range j.Targets {
				if b.inside(t) {
					leader[(t-p.Start)/4] = true
				}
			}
		}
	}
	p.Blocks = p.Blocks[:0]
	for i := 0; i < n; {
		j := i + 1
		for j < n && !leader[j] {
			j++
		}
		p.Blocks = append(p.Blocks, Block{Start: p.Start + uint64(i)*4, End: p.Start + uint64(j)*4})
		i = j
	}
	p.Edges = p.Edges[:0]
	p.entryOut, p.exitIn = nil, nil
	seen := map[[2]int]bool{}
	add := func(from, to int, k EdgeKind, pc, target uint64) {
		if seen[[2]int{from, to}] {
			return
		}
		seen[[2]int{from, to}] = true
		e := len(p.Edges)
		p.Edges = append(p.Edges, Edge{From: from, To: to, Kind: k, PC: pc, Target: target})
		if from == p.Entry() {
			p.entryOut = append(p.entryOut, e)
		} else {
			p.Blocks[from].Succs = append(p.Blocks[from].Succs, e)
		}
		if to == p.Exit() {
			p.exitIn = append(p.exitIn, e)
		} else {
			p.Blocks[to].Preds = append(p.Blocks[to].Preds, e)
		}
	}
	blockAt := func(t uint64) int { i, _ := p.BlockOf(t); return i }
	// to adds the edge for a transfer to t: a block inside, Exit outside.
	to := func(from int, t uint64, inKind EdgeKind, pc uint64) {
		switch {
		case b.inside(t):
			add(from, blockAt(t), inKind, pc, 0)
		case b.c.isEntry(t):
			add(from, p.Exit(), TailCall, pc, t)
		default:
			add(from, p.Exit(), Outside, pc, t)
		}
	}
	for _, e := range p.Entries {
		add(p.Entry(), blockAt(e), Entry, e, 0)
	}
	for bi := range p.Blocks {
		bl := &p.Blocks[bi]
		last := int((bl.End-p.Start)/4) - 1
		pc := bl.End - 4
		fall := func() {
			if bl.End < p.End {
				add(bi, bi+1, Fallthrough, pc, 0)
			} else {
				add(bi, p.Exit(), FallOut, pc, bl.End)
			}
		}
		switch b.kind[last] {
		case ctlCond:
			fall()
			to(bi, b.tgt[last], Taken, pc)
		case ctlBr:
			to(bi, b.tgt[last], Taken, pc)
		case ctlRet:
			add(bi, p.Exit(), Return, pc, 0)
		case ctlHalt:
			add(bi, p.Exit(), Halt, pc, 0)
		case ctlJmp:
			j := b.resolved[last]
			switch {
			case j != nil && j.Resolved:
				for _, t := range j.Targets {
					to(bi, t, JumpTable, pc)
				}
			case p.Insns[last].Dec.Rb == 27:
				// Through pv: by the calling convention, a call.
				add(bi, p.Exit(), TailCall, pc, 0)
			}
		default:
			fall()
		}
	}
}

// resolve looks at every jmp with the values analyze found and reports
// whether any jmp's targets changed.
func (b *builder) resolve(v *values) bool {
	changed := false
	for i, k := range b.kind {
		if k != ctlJmp {
			continue
		}
		j := b.resolveJump(v, i)
		old := b.resolved[i]
		if old == nil || !slices.Equal(old.Targets, j.Targets) {
			changed = true
		}
		b.resolved[i] = j
	}
	return changed
}

// maxTable bounds a jump table's length: more is a misread bound.
const maxTable = 1 << 14

func (b *builder) resolveJump(v *values, i int) *Jump {
	p := b.p
	in := p.Insns[i]
	bi, _ := p.BlockOf(in.PC)
	j := &Jump{PC: in.PC, Block: bi}
	t := v.at[i]
	switch t.k {
	case vConst:
		j.Resolved, j.Targets, j.Note = true, []uint64{t.c}, "constant target"
		return j
	case vLoaded:
	default:
		if in.Dec.Rb == 27 {
			j.Note = "through pv (r27): a tail call to an unknown procedure"
		} else {
			j.Note = "target not loaded from a table"
		}
		return j
	}
	j.Table = t.c
	n, ok := b.bound(v, bi, t.id)
	if !ok {
		j.Note = fmt.Sprintf("jump table at %#x: no bounds check on its index dominates the jmp", t.c)
		return j
	}
	if n <= 0 || n > maxTable {
		j.Note = fmt.Sprintf("jump table at %#x: implausible length %d", t.c, n)
		return j
	}
	j.Entries = n
	set := map[uint64]bool{}
	for k := 0; k < n; k++ {
		raw, ok := b.c.read(t.c+uint64(k)*uint64(t.scale), int(t.size), true)
		if !ok {
			j.Note = fmt.Sprintf("jump table at %#x: entry %d is not in the image's constant data", t.c, k)
			return j
		}
		if t.size == 4 {
			raw = uint64(int64(int32(uint32(raw))))
		}
		dst := raw + t.add
		if dst%4 != 0 || !b.inside(dst) {
			j.Note = fmt.Sprintf("jump table at %#x: entry %d leads to %#x, outside the procedure", t.c, k, dst)
			return j
		}
		set[dst] = true
	}
	for d := range set {
		j.Targets = append(j.Targets, d)
	}
	slices.Sort(j.Targets)
	j.Resolved = true
	j.Note = fmt.Sprintf("jump table at %#x, %d entries", t.c, n)
	return j
}

// bound finds the bounds check that guards block bi: walking back through
// blocks with a single predecessor, a conditional branch on a comparison
// of the index value id with a constant, entered on its in-range side. It
// returns the table length the check allows.
func (b *builder) bound(v *values, bi int, id uint32) (int, bool) {
	p := b.p
	for steps := 0; steps < 32; steps++ {
		preds := p.Blocks[bi].Preds
		if len(preds) != 1 {
			return 0, false
		}
		e := p.Edges[preds[0]]
		if e.From >= len(p.Blocks) {
			return 0, false
		}
		last := int((p.Blocks[e.From].End-p.Start)/4) - 1
		if b.kind[last] == ctlCond {
			c := v.at[last]
			if c.k == vCmp && c.id == id {
				var inRangeTaken bool
				switch p.Insns[last].Dec.Op {
				case alpha.OpBEQ, alpha.OpBLBC:
					inRangeTaken = false
				case alpha.OpBNE, alpha.OpBLBS:
					inRangeTaken = true
				default:
					return 0, false
				}
				if inRangeTaken != (e.Kind == Taken) {
					return 0, false
				}
				n := c.c
				if c.flag == cmpULE {
					n++
				}
				if n > maxTable {
					return maxTable + 1, true
				}
				return int(n), true
			}
		}
		bi = e.From
	}
	return 0, false
}

// finish records calls and jumps and computes reachability.
func (b *builder) finish(v *values) {
	p := b.p
	p.Calls, p.Jumps, p.MissingEdges = nil, nil, false
	for i, k := range b.kind {
		in := p.Insns[i]
		bi, _ := p.BlockOf(in.PC)
		switch k {
		case ctlCall:
			c := Call{PC: in.PC, Block: bi}
			if in.Dec.Op == alpha.OpBR {
				c.Target, c.Known = b.tgt[i], true
			} else {
				c.Indirect = true
				if t := v.at[i]; t.k == vConst {
					c.Target, c.Known = t.c, true
				}
			}
			c.NoReturn = c.Known && b.c.noReturn(c.Target)
			p.Calls = append(p.Calls, c)
		case ctlJmp:
			j := b.resolved[i]
			if j == nil {
				j = &Jump{PC: in.PC, Note: "not analyzed"}
			}
			j.Block = bi
			if !j.Resolved && in.Dec.Rb != 27 {
				p.MissingEdges = true
			}
			p.Jumps = append(p.Jumps, *j)
		}
	}
	// Forward from Entry, backward from Exit.
	var from []int
	for _, e := range p.entryOut {
		from = append(from, p.Edges[e].To)
	}
	p.mark(from, func(b *Block) *bool { return &b.Reachable }, func(b *Block) []int { return b.Succs }, func(e Edge) int { return e.To })
	from = from[:0]
	for _, e := range p.exitIn {
		from = append(from, p.Edges[e].From)
	}
	p.mark(from, func(b *Block) *bool { return &b.ReachesExit }, func(b *Block) []int { return b.Preds }, func(e Edge) int { return e.From })
}

// mark sets flag on every real block reachable from the nodes in from,
// following edges(b) to far(edge); the virtual Entry and Exit are passed.
func (p *Proc) mark(from []int, flag func(*Block) *bool, edges func(*Block) []int, far func(Edge) int) {
	stack := append([]int(nil), from...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n >= len(p.Blocks) || *flag(&p.Blocks[n]) {
			continue
		}
		*flag(&p.Blocks[n]) = true
		for _, e := range edges(&p.Blocks[n]) {
			stack = append(stack, far(p.Edges[e]))
		}
	}
}
