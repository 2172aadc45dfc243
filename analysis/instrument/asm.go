package instrument

import (
	"encoding/binary"
	"fmt"
)

// Integer registers the stubs and the runtime name (Alpha calling standard).
const (
	regV0   = 0
	regT0   = 1
	regT1   = 2
	regT2   = 3
	regS0   = 9
	regS1   = 10
	regA0   = 16
	regA1   = 17
	regA2   = 18
	regA3   = 19
	regT11  = 25
	regRA   = 26
	regSP   = 30
	regZero = 31
)

// Opcodes and functions the stubs emit (Alpha Architecture Handbook,
// appendix C).
const (
	opPAL   = 0x00
	opLDA   = 0x08
	opLDAH  = 0x09
	opINTA  = 0x10 // addq 0x20, subq 0x29, cmpeq 0x2d
	opINTL  = 0x11 // and 0x00, bis 0x20
	opJMP   = 0x1a
	opLDQ   = 0x29
	opSTQ   = 0x2d
	opBR    = 0x30
	opBSR   = 0x34
	opBEQ   = 0x39
	opBNE   = 0x3d
	opBGT   = 0x3f
	palCall = 0x83 // callsys
)

func encMem(opc, ra, rb uint32, disp int16) uint32 {
	return opc<<26 | ra<<21 | rb<<16 | uint32(uint16(disp))
}
func encOp(opc, fn, ra, rb, rc uint32) uint32 { return opc<<26 | ra<<21 | rb<<16 | fn<<5 | rc }
func encOpLit(opc, fn, ra, lit, rc uint32) uint32 {
	return opc<<26 | ra<<21 | (lit&0xff)<<13 | 1<<12 | fn<<5 | rc
}

// asm assembles a run of code at a known address, with labels resolved
// when the run is finished. Branch targets outside the run are absolute
// addresses; every target is checked against the 21-bit displacement.
type asm struct {
	base   uint64
	words  []uint32
	labels map[string]int // label -> word index
	fixups map[int]string // word index of a branch -> label
	abs    map[int]uint64 // word index of a branch -> absolute target
	err    error
}

func newAsm(base uint64) *asm {
	return &asm{base: base, labels: map[string]int{}, fixups: map[int]string{}, abs: map[int]uint64{}}
}

func (a *asm) pc() uint64    { return a.base + 4*uint64(len(a.words)) }
func (a *asm) emit(w uint32) { a.words = append(a.words, w) }
func (a *asm) label(name string) {
	a.labels[name] = len(a.words)
}

// branchTo emits a branch-format word (opcode opc, register ra) to label.
func (a *asm) branchTo(opc, ra uint32, label string) {
	a.fixups[len(a.words)] = label
	a.emit(opc<<26 | ra<<21)
}

// branchAbs emits a branch-format word to an absolute address.
func (a *asm) branchAbs(opc, ra uint32, target uint64) {
	a.abs[len(a.words)] = target
	a.emit(opc<<26 | ra<<21)
}

// brDisp returns the 21-bit displacement from the branch at pc to target.
func brDisp(pc, target uint64) (uint32, error) {
	d := (int64(target) - int64(pc+4)) / 4
	if target%4 != 0 || d < -(1<<20) || d >= 1<<20 {
		return 0, fmt.Errorf("branch from %#x to %#x is out of the 21-bit range", pc, target)
	}
	return uint32(d) & 0x1fffff, nil
}

// loadAddr sets reg to the absolute address v with three instructions that
// need no other register: br to the next word gives its own address, and
// ldah/lda add the 32-bit difference. (An absolute 64-bit constant would
// take five; the static image lies far above 2 GB.)
func (a *asm) loadAddr(reg uint32, v uint64) {
	a.emit(opBR<<26 | reg<<21) // displacement 0: reg = address of the next word
	here := a.pc()
	off := int64(v) - int64(here)
	if off < -(1<<31)+(1<<15) || off >= 1<<31-(1<<15) {
		a.err = fmt.Errorf("address %#x is beyond 2 GB of the code at %#x", v, here)
		return
	}
	lo := int16(off)
	hi := int16((off - int64(lo)) >> 16)
	a.emit(encMem(opLDAH, reg, reg, hi))
	a.emit(encMem(opLDA, reg, reg, lo))
}

// loadConst sets reg to a non-negative constant below 2^31-2^15, always
// in two words so that code size does not depend on the value.
func (a *asm) loadConst(reg uint32, v uint64) {
	lo := int16(v)
	hi := int16((int64(v) - int64(lo)) >> 16)
	a.emit(encMem(opLDAH, reg, regZero, hi))
	a.emit(encMem(opLDA, reg, reg, lo))
}

// increment adds one to the quadword at addr using scratch registers x, y.
func (a *asm) increment(addr uint64, x, y uint32) {
	a.loadAddr(x, addr)
	a.emit(encMem(opLDQ, y, x, 0))
	a.emit(encOpLit(opINTA, 0x20, y, 1, y))
	a.emit(encMem(opSTQ, y, x, 0))
}

// finish resolves the branches and returns the run's bytes.
func (a *asm) finish() ([]byte, error) {
	if a.err != nil {
		return nil, a.err
	}
	for i, l := range a.fixups {
		j, ok := a.labels[l]
		if !ok {
			return nil, fmt.Errorf("instrument: internal error: label %q undefined", l)
		}
		d, err := brDisp(a.base+4*uint64(i), a.base+4*uint64(j))
		if err != nil {
			return nil, err
		}
		a.words[i] |= d
	}
	for i, t := range a.abs {
		d, err := brDisp(a.base+4*uint64(i), t)
		if err != nil {
			return nil, err
		}
		a.words[i] |= d
	}
	b := make([]byte, 4*len(a.words))
	for i, w := range a.words {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b, nil
}
