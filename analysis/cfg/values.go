package cfg

import "dcpi/hwsim/alpha"

// A small forward analysis of the integer registers, enough to read gcc's
// jump tables and GOT-loaded call targets: constants (addresses built from
// gp, return addresses, words of read-only data), a table slot indexed by
// an unknown value, the entry loaded from it, and a comparison of that
// index with a constant. Unknown values carry an identity so that a copy
// of the index (mov) is recognized as the same value the bounds check
// tested.

type vkind uint8

const (
	vBottom vkind = iota // not yet computed
	vTop                 // unknown; id names the value
	vConst               // c
	vScaled              // c + scale*index(id)
	vLoaded              // load of size bytes at c + scale*index(id), plus add
	vCmp                 // index(id) compared with c (flag: cmpULE or cmpULT)
)

const (
	cmpULE = 1
	cmpULT = 2
)

type aval struct {
	k     vkind
	scale uint8
	size  uint8
	flag  uint8
	id    uint32
	c     uint64
	add   uint64
}

// regs is the abstract state of r0..r30 (r31 reads as zero).
type regs [31]aval

type values struct {
	// at holds, per instruction, the value its decision depends on: a
	// jmp's or jsr's target register (Rb), a conditional branch's tested
	// register (Ra), as the instruction saw it.
	at []aval
}

// Identities of unknown values: fresh per (instruction, register), per
// (block, register) where paths with different values meet, and per
// register at entry.
func freshID(i int, r uint8) uint32 { return uint32(i+1)<<5 | uint32(r) }
func mergeID(b int, r int) uint32   { return 1<<31 | uint32(b)<<5 | uint32(r) }
func entryID(r int) uint32          { return 1<<30 | uint32(r) }
func top(id uint32) aval            { return aval{k: vTop, id: id} }
func konst(c uint64) aval           { return aval{k: vConst, c: c} }
func meet(a, b aval, id uint32) aval {
	switch {
	case a.k == vBottom:
		return b
	case b.k == vBottom || a == b:
		return a
	}
	return top(id)
}

// maxPasses bounds the fixpoint iteration; the lattice is shallow, so it
// is reached in a few passes, and stopping early only loses precision.
const maxPasses = 20

func analyze(b *builder) *values {
	p := b.p
	v := &values{at: make([]aval, len(p.Insns))}
	out := make([]regs, len(p.Blocks))
	done := make([]bool, len(p.Blocks)) // out holds a state
	var entry regs
	for r := range entry {
		entry[r] = top(entryID(r))
	}
	if b.c.gpKnown {
		entry[29] = konst(b.c.gp)
	}
	for pass := 0; pass < maxPasses; pass++ {
		changed := false
		for bi := range p.Blocks {
			bl := &p.Blocks[bi]
			var st regs
			reached := false
			for _, e := range bl.Preds {
				from := p.Edges[e].From
				if from != p.Entry() && !done[from] {
					continue
				}
				reached = true
				if from == p.Entry() {
					in := entry
					if bl.Start == p.Start {
						in[27] = konst(p.Start)
					}
					for r := range st {
						st[r] = meet(st[r], in[r], mergeID(bi, r))
					}
					continue
				}
				for r := range st {
					st[r] = meet(st[r], out[from][r], mergeID(bi, r))
				}
			}
			if !reached {
				continue // not reached yet (or never: dead code, or a missing edge)
			}
			done[bi] = true
			for r := range st {
				if st[r].k == vBottom {
					st[r] = top(mergeID(bi, r))
				}
			}
			dead := false
			first := int((bl.Start - p.Start) / 4)
			last := int((bl.End-p.Start)/4) - 1
			for i := first; i <= last; i++ {
				if b.c.gpKnown {
					st[29] = konst(b.c.gp)
				}
				if !b.step(v, &st, i) {
					dead = true
					break
				}
			}
			if dead {
				// After a call that never returns, nothing flows on: the
				// fall-through edge the graph keeps carries no values.
				if done[bi] {
					done[bi] = false
					changed = true
				}
				continue
			}
			if st != out[bi] {
				out[bi] = st
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	return v
}

func (s *regs) get(r uint8) aval {
	if r >= 31 {
		return konst(0)
	}
	return s[r]
}

func (s *regs) set(r uint8, a aval) {
	if r < 31 {
		s[r] = a
	}
}

// The image's gp, when every prologue agrees on it, is taken to hold
// everywhere: the calling convention restores it after every call, and
// code that falls through from a call that never returns (a bsr to abort
// followed by another case's code) would otherwise lose it at the merge.

// callClobbered are the registers a call or PAL call may change (the
// calling convention's temporaries, arguments, v0, ra, pv, at and gp).
var callClobbered = []uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29}

// step applies instruction i to s; it returns false after a call to a
// procedure that never returns.
func (b *builder) step(v *values, s *regs, i int) bool {
	in := b.p.Insns[i]
	d := in.Dec
	fresh := func(r uint8) aval { return top(freshID(i, r)) }
	opb := func() aval {
		if d.Lit {
			return konst(uint64(d.Imm))
		}
		return s.get(d.Rb)
	}
	switch d.Op {
	case alpha.OpLDA, alpha.OpLDAH:
		s.set(d.Ra, offset(s.get(d.Rb), uint64(int64(d.Imm)), fresh(d.Ra)))
	case alpha.OpBIS:
		a, c := s.get(d.Ra), opb()
		switch {
		case a.k == vConst && c.k == vConst:
			s.set(d.Rc, konst(a.c|c.c))
		case a.k == vConst && a.c == 0:
			s.set(d.Rc, c)
		case c.k == vConst && c.c == 0:
			s.set(d.Rc, a)
		default:
			s.set(d.Rc, fresh(d.Rc))
		}
	case alpha.OpADDQ:
		a, c := s.get(d.Ra), opb()
		switch {
		case c.k == vConst:
			s.set(d.Rc, offset(a, c.c, fresh(d.Rc)))
		case a.k == vConst:
			s.set(d.Rc, offset(c, a.c, fresh(d.Rc)))
		default:
			s.set(d.Rc, fresh(d.Rc))
		}
	case alpha.OpS4ADDQ, alpha.OpS8ADDQ:
		scale := uint8(4)
		if d.Op == alpha.OpS8ADDQ {
			scale = 8
		}
		a, c := s.get(d.Ra), opb()

		switch {
		case a.k == vConst && c.k == vConst:
			s.set(d.Rc, konst(a.c*uint64(scale)+c.c))
		case a.k == vTop && c.k == vConst:
			s.set(d.Rc, aval{k: vScaled, scale: scale, id: a.id, c: c.c})
		default:
			s.set(d.Rc, fresh(d.Rc))
		}
	case alpha.OpSLL:
		a, c := s.get(d.Ra), opb()
		switch {
		case a.k == vConst && c.k == vConst:
			s.set(d.Rc, konst(a.c<<(c.c&63)))
		case a.k == vTop && c.k == vConst && (c.c == 2 || c.c == 3):
			s.set(d.Rc, aval{k: vScaled, scale: 1 << c.c, id: a.id})
		default:
			s.set(d.Rc, fresh(d.Rc))
		}
	case alpha.OpLDL, alpha.OpLDQ:
		size := uint8(4)
		if d.Op == alpha.OpLDQ {
			size = 8
		}
		a := offset(s.get(d.Rb), uint64(int64(d.Imm)), aval{})
		switch {
		case a.k == vConst:
			if w, ok := b.c.read(a.c, int(size), true); ok {
				if size == 4 {
					w = uint64(int64(int32(uint32(w))))
				}
				s.set(d.Ra, konst(w))
			} else {
				s.set(d.Ra, fresh(d.Ra))
			}
		case a.k == vScaled && a.scale == size:
			s.set(d.Ra, aval{k: vLoaded, scale: a.scale, size: size, id: a.id, c: a.c})
		default:
			s.set(d.Ra, fresh(d.Ra))
		}
	case alpha.OpCMPULE, alpha.OpCMPULT:
		a, c := s.get(d.Ra), opb()
		flag := uint8(cmpULE)
		if d.Op == alpha.OpCMPULT {
			flag = cmpULT
		}
		switch {
		case a.k == vConst && c.k == vConst:
			r := a.c < c.c || (flag == cmpULE && a.c == c.c)
			if r {
				s.set(d.Rc, konst(1))
			} else {
				s.set(d.Rc, konst(0))
			}
		case a.k == vTop && c.k == vConst:
			s.set(d.Rc, aval{k: vCmp, flag: flag, id: a.id, c: c.c})
		default:
			s.set(d.Rc, fresh(d.Rc))
		}
	case alpha.OpBR:
		if b.kind[i] == ctlCall {
			if b.c.noReturn(b.tgt[i]) {
				return false
			}
			for _, r := range callClobbered {
				s.set(r, fresh(r))
			}
		}
		s.set(d.Ra, konst(in.PC+4))
	case alpha.OpJMP:
		v.at[i] = s.get(d.Rb)
		if b.kind[i] == ctlCall {
			if t := v.at[i]; t.k == vConst && b.c.noReturn(t.c) {
				return false
			}
			for _, r := range callClobbered {
				s.set(r, fresh(r))
			}
		}
		s.set(d.Ra, konst(in.PC+4))
	case alpha.OpCallPal:
		for _, r := range callClobbered {
			if r != 29 {
				s.set(r, fresh(r))
			}
		}
	default:
		if b.kind[i] == ctlCond {
			v.at[i] = s.get(d.Ra)
		}
		if r, ok := intDest(d); ok {
			s.set(r, fresh(r))
		}
	}
	return true
}

// offset adds k to a: a constant or a table slot moves by k, a loaded
// entry gets k added; anything else is unknown (the given value).
func offset(a aval, k uint64, unknown aval) aval {
	switch a.k {
	case vConst, vScaled:
		a.c += k
		return a
	case vLoaded:
		a.add += k
		return a
	}
	return unknown
}

// intDest returns the integer register d writes, if any.
func intDest(d alpha.Decoded) (uint8, bool) {
	switch op := d.Op; {
	case op >= alpha.OpLDA && op <= alpha.OpLDQL,
		op == alpha.OpSTLC, op == alpha.OpSTQC,
		op == alpha.OpRPCC, op == alpha.OpRC, op == alpha.OpRS:
		return d.Ra, true
	case op >= alpha.OpADDL && op <= alpha.OpMULQV,
		op >= alpha.OpSEXTB && op <= alpha.OpFTOIS:
		return d.Rc, true
	}
	return 0, false
}
