package instrument

import (
	"math/bits"

	"dcpi/analysis/cfg"
)

// regSet is a set of integer registers, bit i for $i ($31 never included).
type regSet uint32

const (
	allRegs regSet = 1<<31 - 1
	// syscallClobbered are the registers Linux/Alpha's callsys may clobber
	// ($1-$8, $22-$25, $27, $28; ALPHA-NOTES.md): no code can keep a value
	// in them across a system call, so they are free at a callsys.
	syscallClobbered regSet = 0x1fe | 0xf<<22 | 1<<27 | 1<<28
	// neverScratch are never used as scratch: sp, gp, and the zero register.
	neverScratch regSet = 1<<regSP | 1<<29
)

func reg(r uint32) regSet {
	if r == regZero {
		return 0
	}
	return 1 << r
}

// useDef returns the integer registers an instruction word reads and
// writes. Whatever it cannot classify reads every register and writes
// none, the safe direction for liveness (a register is then never
// thought dead).
func useDef(w uint32) (use, def regSet) {
	opc := w >> 26
	ra, rb, rc := (w>>21)&31, (w>>16)&31, w&31
	lit := w&(1<<12) != 0
	switch {
	case opc == 0x08 || opc == 0x09: // lda, ldah
		return reg(rb), reg(ra)
	case opc == 0x0a || opc == 0x0b || opc == 0x0c || opc == 0x28 || opc == 0x29 || opc == 0x2a || opc == 0x2b:
		return reg(rb), reg(ra) // integer loads
	case opc == 0x0d || opc == 0x0e || opc == 0x0f || opc == 0x2c || opc == 0x2d:
		return reg(ra) | reg(rb), 0 // integer stores
	case opc == 0x2e || opc == 0x2f: // stl_c, stq_c
		return reg(ra) | reg(rb), reg(ra)
	case opc >= 0x20 && opc <= 0x27: // FP loads and stores: the base only
		return reg(rb), 0
	case opc >= 0x10 && opc <= 0x13, opc == 0x1c: // integer operate (and 0x1c's ftoit: reads more, harmless)
		u := reg(ra)
		if !lit {
			u |= reg(rb)
		}
		if opc == 0x11 && isCmov((w>>5)&0x7f) {
			u |= reg(rc) // a cmov keeps rc when its condition fails
		}
		return u, reg(rc)
	case opc == 0x14: // itofs, itoft, sqrt: integer ra to FP
		return reg(ra), 0
	case opc == 0x15 || opc == 0x16 || opc == 0x17: // FP operate
		return 0, 0
	case opc == 0x18: // misc: rpcc writes ra; fetch and the like read rb
		if w&0xffff == 0xc000 {
			return 0, reg(ra)
		}
		return reg(rb), 0
	case opc == 0x1a: // jmp, jsr, ret
		return reg(rb), reg(ra)
	case opc == 0x30 || opc == 0x34: // br, bsr
		return 0, reg(ra)
	case opc >= 0x38: // integer conditional branches
		return reg(ra), 0
	case opc == 0x31 || opc == 0x32 || opc == 0x33 || opc == 0x35 || opc == 0x36 || opc == 0x37:
		return 0, 0 // FP conditional branches
	}
	return allRegs, 0
}

// isCmov reports whether an opcode 0x11 function is a conditional move.
func isCmov(fn uint32) bool {
	switch fn {
	case 0x14, 0x16, 0x24, 0x26, 0x44, 0x46, 0x64, 0x66:
		return true
	}
	return false
}

// isCall reports whether w transfers to a callee that may read any
// register (bsr, jsr) or the kernel (call_pal).
func isCall(w uint32) bool {
	opc := w >> 26
	return opc == 0x34 || opc == opPAL || opc == 0x1a && (w>>14)&3 == 1
}

// liveIn returns, for every instruction of p (by index into p.Insns), the
// integer registers live before it. Every edge to Exit (return, tail call,
// a branch out) and every call is taken to read every register, so only
// values that are dead within the procedure count as dead: conservative,
// never wrong.
func liveIn(p *cfg.Proc) []regSet {
	idx := make(map[uint64]int, len(p.Insns))
	for i, in := range p.Insns {
		idx[in.PC] = i
	}
	live := make([]regSet, len(p.Insns))
	blockIn := make([]regSet, len(p.Blocks))
	for changed := true; changed; {
		changed = false
		for b := len(p.Blocks) - 1; b >= 0; b-- {
			blk := &p.Blocks[b]
			var out regSet
			for _, e := range blk.Succs {
				to := p.Edges[e].To
				if to >= len(p.Blocks) {
					out = allRegs
				} else {
					out |= blockIn[to]
				}
			}
			if len(blk.Succs) == 0 {
				out = allRegs
			}
			first, ok := idx[blk.Start]
			if !ok {
				continue
			}
			n := blk.Len()
			for i := first + n - 1; i >= first; i-- {
				w := p.Insns[i].Word
				u, d := useDef(w)
				if isCall(w) {
					u = allRegs
				}
				out = out&^d | u
				live[i] = out
			}
			if out != blockIn[b] {
				blockIn[b] = out
				changed = true
			}
		}
	}
	return live
}

// scratch picks two registers from free, lowest first.
func scratch(free regSet) (x, y uint32, ok bool) {
	free &^= neverScratch
	if bits.OnesCount32(uint32(free)) < 2 {
		return 0, 0, false
	}
	x = uint32(bits.TrailingZeros32(uint32(free)))
	free &^= 1 << x
	y = uint32(bits.TrailingZeros32(uint32(free)))
	return x, y, true
}
