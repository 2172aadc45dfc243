package alpha

import (
	"strconv"
	"sync"
)

// Symbolizer names an address for the disassembler: objdump prints a branch
// target as "br 120001230 <foo+0x10>". offset is the address minus the
// symbol's value, modulo 2^64: an offset with the top bit set is printed as
// a negative one ("<foo-0x8>"), as objdump does for an address below the
// symbol it chose. ok false prints the bare address.
type Symbolizer interface {
	SymbolFor(addr uint64) (name string, offset uint64, ok bool)
}

// Disasm returns the instruction word at pc as alpha-linux-gnu-objdump -d
// prints it after the bytes column: the mnemonic, a tab, the operands
// ("ldq\tt0,8(sp)", "unop\t", "br\t120001230 <foo+0x10>", "ret"), or
// ".long 0x..." for a word objdump cannot decode. Branch and jump targets
// are named by sym; with a nil sym they print as "0x120001230", as objdump
// prints them for a file without symbols. PALcode-mode opcodes print as
// objdump's default machine does (pal19, pal1b, ...); see DisasmModel for
// the chip-specific forms.
func Disasm(word uint32, pc uint64, sym Symbolizer) string {
	var buf [80]byte
	return string(AppendDisasm(buf[:0], word, pc, sym))
}

// AppendDisasm appends Disasm's text to dst, for callers that print many
// instructions and want no allocation per instruction.
func AppendDisasm(dst []byte, word uint32, pc uint64, sym Symbolizer) []byte {
	return disAppend(dst, word, pc, sym, disLookup(DisasmPALNone, word))
}

// DisasmModel disassembles for one CPU: PAL picks the PALcode-mode
// mnemonics (objdump -m alpha:ev5 for the 21164), and Lacks tells callers
// which instructions the model cannot execute, so a listing can mark them.
// objdump itself prints every instruction it knows whatever the CPU.
type DisasmModel struct {
	Model Model
	PAL   DisasmPAL
}

// Disasm is the package-level Disasm with d's PALcode mnemonics.
func (d DisasmModel) Disasm(word uint32, pc uint64, sym Symbolizer) string {
	var buf [80]byte
	return string(d.AppendDisasm(buf[:0], word, pc, sym))
}

// AppendDisasm is the package-level AppendDisasm with d's PALcode mnemonics.
func (d DisasmModel) AppendDisasm(dst []byte, word uint32, pc uint64, sym Symbolizer) []byte {
	return disAppend(dst, word, pc, sym, disLookup(d.PAL, word))
}

// Lacks reports whether d.Model cannot execute word in user mode: it is not
// a defined instruction, it belongs to an extension (BWX, FIX, CIX, MVI) the
// model lacks, or it is a PALcode-mode instruction (hw_ld, hw_mfpr, ...),
// which raises OPCDEC outside PALcode. Decodings follow objdump's table,
// not the execution unit: a word objdump names is "defined" here even where
// a field the architecture requires to be zero is not.
func (d DisasmModel) Lacks(word uint32) bool {
	e := disLookup(d.PAL, word)
	return e == nil || e.priv || e.ext&^d.Model.Ext != 0
}

// DisasmExt returns the AMASK extension an instruction word needs (0 for
// the base architecture) and whether objdump decodes the word at all.
func DisasmExt(word uint32) (ext Ext, defined bool) {
	e := disLookup(DisasmPALNone, word)
	if e == nil {
		return 0, false
	}
	return e.ext, true
}

// disIntRegs are the OSF/1 software names objdump prints ($27 is t12, not pv).
var disIntRegs = [32]string{
	"v0", "t0", "t1", "t2", "t3", "t4", "t5", "t6",
	"t7", "s0", "s1", "s2", "s3", "s4", "s5", "fp",
	"a0", "a1", "a2", "a3", "a4", "a5", "t8", "t9",
	"t10", "t11", "ra", "t12", "at", "gp", "sp", "zero",
}

var disFPRegs = func() (r [32]string) {
	for i := range r {
		r[i] = "$f" + strconv.Itoa(i)
	}
	return r
}()

// disOpIndex holds the candidate entries (indexes into disTable, in table
// order) for one major opcode. Opcodes with many forms are split further by
// instruction bits 5-15, which hold the function code of the operate, FP and
// memory-function formats: start[k]..start[k+1] in ents are the candidates
// for key k.
type disOpIndex struct {
	list  []uint16
	start []uint32
	ents  []uint16
}

// disIndex is the lookup structure for one PALcode machine.
type disIndex [64]disOpIndex

// disBucketMin is the number of candidates above which an opcode is split by
// function code; below it a linear scan is as fast.
const disBucketMin = 8

var disIndexes [disPALCount]struct {
	once sync.Once
	idx  *disIndex
}

// disGetIndex builds the index for a machine on first use.
func disGetIndex(pal DisasmPAL) *disIndex {
	if pal >= disPALCount {
		pal = DisasmPALNone
	}
	slot := &disIndexes[pal]
	slot.once.Do(func() { slot.idx = disBuildIndex(pal) })
	return slot.idx
}

func disBuildIndex(pal DisasmPAL) *disIndex {
	var bit uint8
	if pal != DisasmPALNone {
		bit = 1 << (pal - 1)
	}
	ix := new(disIndex)
	for i := range disTable {
		e := &disTable[i]
		if e.pal != 0 && e.pal&bit == 0 {
			continue
		}
		op := e.match >> 26
		ix[op].list = append(ix[op].list, uint16(i))
	}
	for op := range ix {
		oi := &ix[op]
		if len(oi.list) <= disBucketMin {
			continue
		}
		oi.start = make([]uint32, 2049)
		for k := uint32(0); k < 2048; k++ {
			oi.start[k] = uint32(len(oi.ents))
			for _, i := range oi.list {
				e := &disTable[i]
				if (k<<5^e.match)&e.mask&0xFFE0 == 0 {
					oi.ents = append(oi.ents, i)
				}
			}
		}
		oi.start[2048] = uint32(len(oi.ents))
	}
	return ix
}

// disLookup returns the entry objdump prints word with, or nil.
func disLookup(pal DisasmPAL, w uint32) *disInsn {
	return disGetIndex(pal).lookup(w)
}

// lookup returns the first candidate whose fixed bits match and whose
// unprinted operands hold.
func (ix *disIndex) lookup(w uint32) *disInsn {
	oi := &ix[w>>26]
	cands := oi.list
	if oi.start != nil {
		k := w >> 5 & 0x7FF
		cands = oi.ents[oi.start[k]:oi.start[k+1]]
	}
	for _, i := range cands {
		e := &disTable[i]
		if (w^e.match)&e.mask == 0 && (e.need == 0 || disConstraintsHold(w, e.need)) {
			return e
		}
	}
	return nil
}

func disConstraintsHold(w uint32, need uint8) bool {
	ra, rb, rc := w>>21&31, w>>16&31, w&31
	switch {
	case need&disNeedZA != 0 && ra != 31,
		need&disNeedZB != 0 && rb != 31,
		need&disNeedZC != 0 && rc != 31,
		need&disNeedRBA != 0 && rb != ra,
		need&disNeedRCA != 0 && rc != ra:
		return false
	}
	return true
}

// disAppend formats word with entry e (nil: the .long fallback).
func disAppend(dst []byte, w uint32, pc uint64, sym Symbolizer, e *disInsn) []byte {
	if e == nil {
		return disAppendLong(dst, w)
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
		case disArgZA, disArgZB, disArgZC, disArgRBA, disArgRCA:
			continue
		case disArgPRB:
			dst = append(dst, '(')
			dst = append(dst, disIntRegs[w>>16&31]...)
			dst = append(dst, ')')
			comma = true
			continue
		}
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		switch a {
		case disArgRA:
			dst = append(dst, disIntRegs[w>>21&31]...)
		case disArgRB:
			dst = append(dst, disIntRegs[w>>16&31]...)
		case disArgRC:
			dst = append(dst, disIntRegs[w&31]...)
		case disArgFA:
			dst = append(dst, disFPRegs[w>>21&31]...)
		case disArgFB:
			dst = append(dst, disFPRegs[w>>16&31]...)
		case disArgFC:
			dst = append(dst, disFPRegs[w&31]...)
		case disArgCPRB:
			dst = append(dst, '(')
			dst = append(dst, disIntRegs[w>>16&31]...)
			dst = append(dst, ')')
		case disArgLIT:
			dst = disAppendHex(dst, uint64(w>>13&0xFF))
		case disArgMDISP:
			dst = strconv.AppendInt(dst, int64(int16(w)), 10)
		case disArgBDISP:
			dst = disAppendAddr(dst, pc+4+uint64(disSignExtend(w, 21)*4), sym)
		case disArgPALFN:
			dst = disAppendHex(dst, uint64(w&0x3FFFFFF))
		case disArgJMPHINT:
			dst = disAppendAddr(dst, pc+4+uint64(disSignExtend(w, 14)*4), sym)
		case disArgRETHINT:
			dst = disAppendHex(dst, uint64(w&0x3FFF))
		case disArgEV4HWDISP:
			dst = strconv.AppendInt(dst, disSignExtend(w, 12), 10)
		case disArgEV4HWINDEX:
			dst = disAppendHex(dst, uint64(w&0x1F))
		case disArgEV4EXTINDEX:
			dst = disAppendHex(dst, uint64(w&0xFF))
		case disArgEV5HWDISP:
			dst = strconv.AppendInt(dst, disSignExtend(w, 10), 10)
		case disArgEV5HWINDEX, disArgEV6HWINDEX:
			dst = disAppendHex(dst, uint64(w&0xFFFF))
		case disArgEV6HWHINT:
			dst = disAppendAddr(dst, pc+4+uint64(disSignExtend(w, 13)*4), sym)
		}
	}
	return dst
}

// disSignExtend returns the low bits of w as a signed number.
func disSignExtend(w uint32, bits uint) int64 {
	return int64(int32(w<<(32-bits)) >> (32 - bits))
}

// disAppendHex appends v as C's "%#x": "0" for zero, else 0x and lower-case
// hex digits.
func disAppendHex(dst []byte, v uint64) []byte {
	if v == 0 {
		return append(dst, '0')
	}
	return strconv.AppendUint(append(dst, "0x"...), v, 16)
}

// disAppendLong appends objdump's fallback for an undecodable word, C's
// ".long %#08x".
func disAppendLong(dst []byte, w uint32) []byte {
	dst = append(dst, ".long "...)
	if w == 0 {
		return append(dst, "00000000"...)
	}
	dst = append(dst, "0x"...)
	for n := disHexDigits(uint64(w)); n < 6; n++ {
		dst = append(dst, '0')
	}
	return strconv.AppendUint(dst, uint64(w), 16)
}

func disHexDigits(v uint64) int {
	n := 1
	for v >= 16 {
		v >>= 4
		n++
	}
	return n
}

// disAppendAddr appends a code address as objdump's print_address does:
// hex without leading zeros, then " <sym+0xoff>" when there are symbols.
func disAppendAddr(dst []byte, addr uint64, sym Symbolizer) []byte {
	if sym == nil {
		return strconv.AppendUint(append(dst, "0x"...), addr, 16)
	}
	dst = strconv.AppendUint(dst, addr, 16)
	name, off, ok := sym.SymbolFor(addr)
	if !ok {
		return dst
	}
	dst = append(dst, " <"...)
	dst = disAppendSymOff(dst, name, off)
	return append(dst, '>')
}

// disAppendSymOff appends "name", "name+0xoff" or "name-0xoff".
func disAppendSymOff(dst []byte, name string, off uint64) []byte {
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
