package disasm

import (
	"strconv"
	"sync"

	"dcpi/hwsim/alpha"
)

// Symbolizer names an address for the disassembler: objdump prints a branch
// target as "br 120001230 <foo+0x10>". offset is the address minus the
// symbol's value, modulo 2^64: an offset with the top bit set is printed as
// a negative one ("<foo-0x8>"), as objdump does for an address below the
// symbol it chose. ok false prints the bare address.
type Symbolizer interface {
	SymbolFor(addr uint64) (name string, offset uint64, ok bool)
}

// Insn returns the instruction word at pc as alpha-linux-gnu-objdump -d
// prints it after the bytes column: the mnemonic, a tab, the operands
// ("ldq\tt0,8(sp)", "unop\t", "br\t120001230 <foo+0x10>", "ret"), or
// ".long 0x..." for a word objdump cannot decode. Branch and jump targets
// are named by sym; with a nil sym they print as "0x120001230", as objdump
// prints them for a file without symbols. PALcode-mode opcodes print as
// objdump's default machine does (pal19, pal1b, ...); see Machine for
// the chip-specific forms.
func Insn(word uint32, pc uint64, sym Symbolizer) string {
	var buf [80]byte
	return string(AppendInsn(buf[:0], word, pc, sym))
}

// AppendInsn appends Insn's text to dst, for callers that print many
// instructions and want no allocation per instruction.
func AppendInsn(dst []byte, word uint32, pc uint64, sym Symbolizer) []byte {
	return appendInsn(dst, word, pc, sym, lookup(PALNone, word))
}

// Machine disassembles for one CPU: PAL picks the PALcode-mode
// mnemonics (objdump -m alpha:ev5 for the 21164), and Lacks tells callers
// which instructions the model cannot execute, so a listing can mark them.
// objdump itself prints every instruction it knows whatever the CPU.
type Machine struct {
	Model alpha.Model
	PAL   PAL
}

// Insn is the package-level Insn with m's PALcode mnemonics.
func (m Machine) Insn(word uint32, pc uint64, sym Symbolizer) string {
	var buf [80]byte
	return string(m.AppendInsn(buf[:0], word, pc, sym))
}

// AppendInsn is the package-level AppendInsn with m's PALcode mnemonics.
func (m Machine) AppendInsn(dst []byte, word uint32, pc uint64, sym Symbolizer) []byte {
	return appendInsn(dst, word, pc, sym, lookup(m.PAL, word))
}

// Lacks reports whether m.Model cannot execute word in user mode: it is not
// a defined instruction, it belongs to an extension (BWX, FIX, CIX, MVI) the
// model lacks, or it is a PALcode-mode instruction (hw_ld, hw_mfpr, ...),
// which raises OPCDEC outside PALcode. Decodings follow objdump's table,
// not the execution unit: a word objdump names is "defined" here even where
// a field the architecture requires to be zero is not.
func (m Machine) Lacks(word uint32) bool {
	e := lookup(m.PAL, word)
	return e == nil || e.priv || e.ext&^m.Model.Ext != 0
}

// Needs returns the AMASK extension an instruction word needs (0 for
// the base architecture) and whether objdump decodes the word at all.
func Needs(word uint32) (ext alpha.Ext, defined bool) {
	e := lookup(PALNone, word)
	if e == nil {
		return 0, false
	}
	return e.ext, true
}

// intRegs are the OSF/1 software names objdump prints ($27 is t12, not pv).
var intRegs = [32]string{
	"v0", "t0", "t1", "t2", "t3", "t4", "t5", "t6",
	"t7", "s0", "s1", "s2", "s3", "s4", "s5", "fp",
	"a0", "a1", "a2", "a3", "a4", "a5", "t8", "t9",
	"t10", "t11", "ra", "t12", "at", "gp", "sp", "zero",
}

var fPRegs = func() (r [32]string) {
	for i := range r {
		r[i] = "$f" + strconv.Itoa(i)
	}
	return r
}()

// opIndex holds the candidate entries (indexes into table, in table
// order) for one major opcode. Opcodes with many forms are split further by
// instruction bits 5-15, which hold the function code of the operate, FP and
// memory-function formats: start[k]..start[k+1] in ents are the candidates
// for key k.
type opIndex struct {
	list  []uint16
	start []uint32
	ents  []uint16
}

// index is the lookup structure for one PALcode machine.
type index [64]opIndex

// bucketMin is the number of candidates above which an opcode is split by
// function code; below it a linear scan is as fast.
const bucketMin = 8

var indexes [pALCount]struct {
	once sync.Once
	idx  *index
}

// getIndex builds the index for a machine on first use.
func getIndex(pal PAL) *index {
	if pal >= pALCount {
		pal = PALNone
	}
	slot := &indexes[pal]
	slot.once.Do(func() { slot.idx = buildIndex(pal) })
	return slot.idx
}

func buildIndex(pal PAL) *index {
	var bit uint8
	if pal != PALNone {
		bit = 1 << (pal - 1)
	}
	ix := new(index)
	for i := range table {
		e := &table[i]
		if e.pal != 0 && e.pal&bit == 0 {
			continue
		}
		op := e.match >> 26
		ix[op].list = append(ix[op].list, uint16(i))
	}
	for op := range ix {
		oi := &ix[op]
		if len(oi.list) <= bucketMin {
			continue
		}
		oi.start = make([]uint32, 2049)
		for k := uint32(0); k < 2048; k++ {
			oi.start[k] = uint32(len(oi.ents))
			for _, i := range oi.list {
				e := &table[i]
				if (k<<5^e.match)&e.mask&0xFFE0 == 0 {
					oi.ents = append(oi.ents, i)
				}
			}
		}
		oi.start[2048] = uint32(len(oi.ents))
	}
	return ix
}

// lookup returns the entry objdump prints word with, or nil.
func lookup(pal PAL, w uint32) *insn {
	return getIndex(pal).lookup(w)
}

// lookup returns the first candidate whose fixed bits match and whose
// unprinted operands hold.
func (ix *index) lookup(w uint32) *insn {
	oi := &ix[w>>26]
	cands := oi.list
	if oi.start != nil {
		k := w >> 5 & 0x7FF
		cands = oi.ents[oi.start[k]:oi.start[k+1]]
	}
	for _, i := range cands {
		e := &table[i]
		if (w^e.match)&e.mask == 0 && (e.need == 0 || constraintsHold(w, e.need)) {
			return e
		}
	}
	return nil
}

func constraintsHold(w uint32, need uint8) bool {
	ra, rb, rc := w>>21&31, w>>16&31, w&31
	switch {
	case need&needZA != 0 && ra != 31,
		need&needZB != 0 && rb != 31,
		need&needZC != 0 && rc != 31,
		need&needRBA != 0 && rb != ra,
		need&needRCA != 0 && rc != ra:
		return false
	}
	return true
}

// appendInsn formats word with entry e (nil: the .long fallback).
func appendInsn(dst []byte, w uint32, pc uint64, sym Symbolizer, e *insn) []byte {
	if e == nil {
		return appendLong(dst, w)
	}
	dst = append(dst, e.name...)
	if e.nargs == 0 {
		return dst
	}
	// objdump puts the tab after the mnemonic whenever the form has
	// operands, even unprinted ones: "unop\t", "nop\t".
	dst = append(dst, '\t')
	comma := false
	for _, a := range e.args[:e.nargs] {
		switch a {
		case argZA, argZB, argZC, argRBA, argRCA:
			continue
		case argPRB:
			dst = append(dst, '(')
			dst = append(dst, intRegs[w>>16&31]...)
			dst = append(dst, ')')
			comma = true
			continue
		}
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		switch a {
		case argRA:
			dst = append(dst, intRegs[w>>21&31]...)
		case argRB:
			dst = append(dst, intRegs[w>>16&31]...)
		case argRC:
			dst = append(dst, intRegs[w&31]...)
		case argFA:
			dst = append(dst, fPRegs[w>>21&31]...)
		case argFB:
			dst = append(dst, fPRegs[w>>16&31]...)
		case argFC:
			dst = append(dst, fPRegs[w&31]...)
		case argCPRB:
			dst = append(dst, '(')
			dst = append(dst, intRegs[w>>16&31]...)
			dst = append(dst, ')')
		case argLIT:
			dst = appendHex(dst, uint64(w>>13&0xFF))
		case argMDISP:
			dst = strconv.AppendInt(dst, int64(int16(w)), 10)
		case argBDISP:
			dst = appendAddr(dst, pc+4+uint64(signExtend(w, 21)*4), sym)
		case argPALFN:
			dst = appendHex(dst, uint64(w&0x3FFFFFF))
		case argJMPHINT:
			dst = appendAddr(dst, pc+4+uint64(signExtend(w, 14)*4), sym)
		case argRETHINT:
			dst = appendHex(dst, uint64(w&0x3FFF))
		case argEV4HWDISP:
			dst = strconv.AppendInt(dst, signExtend(w, 12), 10)
		case argEV4HWINDEX:
			dst = appendHex(dst, uint64(w&0x1F))
		case argEV4EXTINDEX:
			dst = appendHex(dst, uint64(w&0xFF))
		case argEV5HWDISP:
			dst = strconv.AppendInt(dst, signExtend(w, 10), 10)
		case argEV5HWINDEX, argEV6HWINDEX:
			dst = appendHex(dst, uint64(w&0xFFFF))
		case argEV6HWHINT:
			dst = appendAddr(dst, pc+4+uint64(signExtend(w, 13)*4), sym)
		}
	}
	return dst
}

// signExtend returns the low bits of w as a signed number.
func signExtend(w uint32, bits uint) int64 {
	return int64(int32(w<<(32-bits)) >> (32 - bits))
}

// appendHex appends v as C's "%#x": "0" for zero, else 0x and lower-case
// hex digits.
func appendHex(dst []byte, v uint64) []byte {
	if v == 0 {
		return append(dst, '0')
	}
	return strconv.AppendUint(append(dst, "0x"...), v, 16)
}

// appendLong appends objdump's fallback for an undecodable word, C's
// ".long %#08x".
func appendLong(dst []byte, w uint32) []byte {
	dst = append(dst, ".long "...)
	if w == 0 {
		return append(dst, "00000000"...)
	}
	dst = append(dst, "0x"...)
	for n := hexDigits(uint64(w)); n < 6; n++ {
		dst = append(dst, '0')
	}
	return strconv.AppendUint(dst, uint64(w), 16)
}

func hexDigits(v uint64) int {
	n := 1
	for v >= 16 {
		v >>= 4
		n++
	}
	return n
}

// appendAddr appends a code address as objdump's print_address does:
// hex without leading zeros, then " <sym+0xoff>" when there are symbols.
func appendAddr(dst []byte, addr uint64, sym Symbolizer) []byte {
	if sym == nil {
		return strconv.AppendUint(append(dst, "0x"...), addr, 16)
	}
	dst = strconv.AppendUint(dst, addr, 16)
	name, off, ok := sym.SymbolFor(addr)
	if !ok {
		return dst
	}
	dst = append(dst, " <"...)
	dst = appendSymOff(dst, name, off)
	return append(dst, '>')
}

// appendSymOff appends "name", "name+0xoff" or "name-0xoff".
func appendSymOff(dst []byte, name string, off uint64) []byte {
	dst = append(dst, name...)
	switch {
	case off == 0:
	case int64(off) < 0:
		dst = strconv.AppendUint(append(dst, "-0x"...), -off, 16)
	default:
		dst = strconv.AppendUint(append(dst, "+0x"...), off, 16)
	}
	return dst
}
