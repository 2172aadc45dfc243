package alpha

// Decoded is one predecoded instruction: what the interpreter needs and
// nothing else, 12 bytes, so a page of 2048 instructions decodes once into
// a 24 KB array and is then executed from there.
type Decoded struct {
	Op Op
	// Ra, Rb, Rc index the integer or FP register file the Op names. A
	// destination of register 31 is rewritten to SinkReg, so writes to the
	// zero register land in a slot nobody reads and register 31 stays zero
	// without a test on the hot path.
	Ra, Rb, Rc uint8
	// Lit is set when operand b is the 8-bit literal held in Imm.
	Lit bool
	// Qual holds the FP function field's qualifier bits (function >> 6):
	// bits 0-1 rounding (0 chopped, 1 minus infinity, 2 normal, 3 dynamic),
	// bits 2-4 trap qualifiers (/U or /V, /I, /S).
	Qual uint16
	// Imm is the literal, the byte displacement (LDAH's already shifted by
	// 16), the branch displacement in bytes, or the PAL function.
	Imm int32
}

// SinkReg is the register-file slot that receives writes to R31 and F31.
const SinkReg = 32

// Field extraction (Alpha Architecture Handbook, "Instruction Formats").
func opcodeOf(w uint32) uint32 { return w >> 26 }
func raOf(w uint32) uint8      { return uint8(w>>21) & 31 }
func rbOf(w uint32) uint8      { return uint8(w>>16) & 31 }
func rcOf(w uint32) uint8      { return uint8(w) & 31 }
func memDisp(w uint32) int32   { return int32(int16(uint16(w))) }
func brDisp(w uint32) int32    { return int32(w<<11) >> 9 } // 21 bits, times 4
func intFunc(w uint32) uint32  { return (w >> 5) & 0x7f }
func fpFunc(w uint32) uint32   { return (w >> 5) & 0x7ff }

// dest rewrites a destination register of 31 to the sink slot.
func dest(r uint8) uint8 {
	if r == 31 {
		return SinkReg
	}
	return r
}

// memOps maps the memory-format opcodes 0x08-0x0F and 0x20-0x2F.
var memOps = [64]struct {
	op    Op
	ext   Ext
	store bool
}{
	0x08: {op: OpLDA}, 0x09: {op: OpLDAH},
	0x0A: {op: OpLDBU, ext: ExtBWX}, 0x0B: {op: OpLDQU},
	0x0C: {op: OpLDWU, ext: ExtBWX}, 0x0D: {op: OpSTW, ext: ExtBWX, store: true},
	0x0E: {op: OpSTB, ext: ExtBWX, store: true}, 0x0F: {op: OpSTQU, store: true},
	0x20: {op: OpLDF}, 0x21: {op: OpLDG}, 0x22: {op: OpLDS}, 0x23: {op: OpLDT},
	0x24: {op: OpSTF, store: true}, 0x25: {op: OpSTG, store: true},
	0x26: {op: OpSTS, store: true}, 0x27: {op: OpSTT, store: true},
	0x28: {op: OpLDL}, 0x29: {op: OpLDQ}, 0x2A: {op: OpLDLL}, 0x2B: {op: OpLDQL},
	0x2C: {op: OpSTL, store: true}, 0x2D: {op: OpSTQ, store: true},
	0x2E: {op: OpSTLC, store: true}, 0x2F: {op: OpSTQC, store: true},
}

var branchOps = [64]Op{
	0x30: OpBR, 0x31: OpFBEQ, 0x32: OpFBLT, 0x33: OpFBLE, 0x34: OpBR, 0x35: OpFBNE,
	0x36: OpFBGE, 0x37: OpFBGT, 0x38: OpBLBC, 0x39: OpBEQ, 0x3A: OpBLT, 0x3B: OpBLE,
	0x3C: OpBLBS, 0x3D: OpBNE, 0x3E: OpBGE, 0x3F: OpBGT,
}

// Operate-format function codes, by opcode.
var (
	intaOps = map[uint32]Op{
		0x00: OpADDL, 0x02: OpS4ADDL, 0x09: OpSUBL, 0x0B: OpS4SUBL, 0x0F: OpCMPBGE,
		0x12: OpS8ADDL, 0x1B: OpS8SUBL, 0x1D: OpCMPULT, 0x20: OpADDQ, 0x22: OpS4ADDQ,
		0x29: OpSUBQ, 0x2B: OpS4SUBQ, 0x2D: OpCMPEQ, 0x32: OpS8ADDQ, 0x3B: OpS8SUBQ,
		0x3D: OpCMPULE, 0x40: OpADDLV, 0x49: OpSUBLV, 0x4D: OpCMPLT, 0x60: OpADDQV,
		0x69: OpSUBQV, 0x6D: OpCMPLE,
	}
	intlOps = map[uint32]Op{
		0x00: OpAND, 0x08: OpBIC, 0x14: OpCMOVLBS, 0x16: OpCMOVLBC, 0x20: OpBIS,
		0x24: OpCMOVEQ, 0x26: OpCMOVNE, 0x28: OpORNOT, 0x40: OpXOR, 0x44: OpCMOVLT,
		0x46: OpCMOVGE, 0x48: OpEQV, 0x61: OpAMASK, 0x64: OpCMOVLE, 0x66: OpCMOVGT,
		0x6C: OpIMPLVER,
	}
	intsOps = map[uint32]Op{
		0x02: OpMSKBL, 0x06: OpEXTBL, 0x0B: OpINSBL, 0x12: OpMSKWL, 0x16: OpEXTWL,
		0x1B: OpINSWL, 0x22: OpMSKLL, 0x26: OpEXTLL, 0x2B: OpINSLL, 0x30: OpZAP,
		0x31: OpZAPNOT, 0x32: OpMSKQL, 0x34: OpSRL, 0x36: OpEXTQL, 0x39: OpSLL,
		0x3B: OpINSQL, 0x3C: OpSRA, 0x52: OpMSKWH, 0x57: OpINSWH, 0x5A: OpEXTWH,
		0x62: OpMSKLH, 0x67: OpINSLH, 0x6A: OpEXTLH, 0x72: OpMSKQH, 0x77: OpINSQH,
		0x7A: OpEXTQH,
	}
	intmOps = map[uint32]Op{
		0x00: OpMULL, 0x20: OpMULQ, 0x30: OpUMULH, 0x40: OpMULLV, 0x60: OpMULQV,
	}
	// Opcode 0x1C: the extension each function belongs to.
	fptiOps = map[uint32]struct {
		op  Op
		ext Ext
	}{
		0x00: {OpSEXTB, ExtBWX}, 0x01: {OpSEXTW, ExtBWX},
		0x30: {OpCTPOP, ExtCIX}, 0x31: {OpPERR, ExtMVI}, 0x32: {OpCTLZ, ExtCIX},
		0x33: {OpCTTZ, ExtCIX}, 0x34: {OpUNPKBW, ExtMVI}, 0x35: {OpUNPKBL, ExtMVI},
		0x36: {OpPKWB, ExtMVI}, 0x37: {OpPKLB, ExtMVI}, 0x38: {OpMINSB8, ExtMVI},
		0x39: {OpMINSW4, ExtMVI}, 0x3A: {OpMINUB8, ExtMVI}, 0x3B: {OpMINUW4, ExtMVI},
		0x3C: {OpMAXUB8, ExtMVI}, 0x3D: {OpMAXUW4, ExtMVI}, 0x3E: {OpMAXSB8, ExtMVI},
		0x3F: {OpMAXSW4, ExtMVI}, 0x70: {OpFTOIT, ExtFIX}, 0x78: {OpFTOIS, ExtFIX},
	}
	// Opcode 0x17, datatype-independent FP operates.
	fltlOps = map[uint32]Op{
		0x010: OpCVTLQ, 0x020: OpCPYS, 0x021: OpCPYSN, 0x022: OpCPYSE, 0x024: OpMTFPCR,
		0x025: OpMFFPCR, 0x02A: OpFCMOVEQ, 0x02B: OpFCMOVNE, 0x02C: OpFCMOVLT,
		0x02D: OpFCMOVGE, 0x02E: OpFCMOVLE, 0x02F: OpFCMOVGT, 0x030: OpCVTQL,
		0x130: OpCVTQL, 0x530: OpCVTQL,
	}
	// Opcode 0x16 by the low six bits of the function; the rest are qualifiers.
	fltiOps = map[uint32]Op{
		0x00: OpADDS, 0x01: OpSUBS, 0x02: OpMULS, 0x03: OpDIVS, 0x20: OpADDT,
		0x21: OpSUBT, 0x22: OpMULT, 0x23: OpDIVT, 0x24: OpCMPTUN, 0x25: OpCMPTEQ,
		0x26: OpCMPTLT, 0x27: OpCMPTLE, 0x2C: OpCVTTS, 0x2F: OpCVTTQ, 0x3C: OpCVTQS,
		0x3E: OpCVTQT,
	}
	// The MISC opcode 0x18 keeps its function in the displacement field.
	miscOps = map[uint32]Op{
		0x0000: OpTRAPB, 0x0400: OpEXCB, 0x4000: OpMB, 0x4400: OpWMB, 0x8000: OpFETCH,
		0xA000: OpFETCH, 0xC000: OpRPCC, 0xE000: OpRC, 0xE800: OpECB, 0xF000: OpRS,
		0xF800: OpWH64, 0xFC00: OpWH64,
	}
)

// Decode decodes one instruction word for a CPU of the given model. It
// never fails: an encoding the model cannot execute decodes to OpInvalid
// (the hardware's reserved-opcode trap, SIGILL for a user process) and one
// hwsim does not implement to OpUnimpl.
func Decode(w uint32, m Model) Decoded {
	d, ext := decode(w)
	if ext&^m.Ext != 0 {
		return Decoded{Op: OpInvalid}
	}
	return d
}

// decode decodes w and reports the extensions it needs.
func decode(w uint32) (Decoded, Ext) {
	opc := opcodeOf(w)
	ra, rb, rc := raOf(w), rbOf(w), rcOf(w)
	switch {
	case opc == 0x00:
		return Decoded{Op: OpCallPal, Imm: int32(w & 0x03ffffff)}, 0

	case memOps[opc].op != 0:
		e := memOps[opc]
		d := Decoded{Op: e.op, Ra: ra, Rb: rb, Imm: memDisp(w)}
		switch {
		case e.op == OpLDAH:
			d.Imm <<= 16
			d.Ra = dest(ra)
		case e.op == OpLDA:
			d.Ra = dest(ra)
		case !e.store && ra == 31:
			// A load into R31 or F31 is a prefetch (UNOP is ldq_u r31): it
			// never faults and changes no register.
			d.Op = OpFETCH
		}
		return d, e.ext

	case opc >= 0x30:
		return Decoded{Op: branchOps[opc], Ra: dest(ra), Imm: brDisp(w)}, 0

	case opc == 0x1A:
		// Imm keeps the function field: the jump's kind (bits 14-15) and
		// its target hint (bits 0-13), which the branch predictor uses.
		return Decoded{Op: OpJMP, Ra: dest(ra), Rb: rb, Imm: int32(w & 0xffff)}, 0

	case opc == 0x18:
		op, ok := miscOps[w&0xffff]
		if !ok {
			return Decoded{Op: OpInvalid}, 0
		}
		d := Decoded{Op: op, Ra: ra, Rb: rb}
		if op == OpRPCC || op == OpRC || op == OpRS {
			d.Ra = dest(ra)
		}
		return d, 0

	case opc >= 0x10 && opc <= 0x13:
		table := [...]map[uint32]Op{intaOps, intlOps, intsOps, intmOps}[opc-0x10]
		op, ok := table[intFunc(w)]
		if !ok {
			return Decoded{Op: OpInvalid}, 0
		}
		return operate(w, op), 0

	case opc == 0x1C:
		e, ok := fptiOps[intFunc(w)]
		if !ok {
			return Decoded{Op: OpInvalid}, 0
		}
		d := operate(w, e.op)
		if e.op == OpFTOIT || e.op == OpFTOIS {
			// FP source in Ra, integer destination in Rc.
			d.Lit = false
		}
		return d, e.ext

	case opc == 0x14:
		fn := fpFunc(w)
		d := Decoded{Ra: ra, Rb: rb, Rc: dest(rc), Qual: uint16(fn >> 6)}
		switch {
		case fn == 0x004:
			d.Op = OpITOFS
		case fn == 0x014:
			d.Op = OpITOFF
		case fn == 0x024:
			d.Op = OpITOFT
		case fn&0x3f == 0x0b:
			d.Op = OpSQRTS
		case fn&0x3f == 0x2b:
			d.Op = OpSQRTT
		case fn&0x3f == 0x0a || fn&0x3f == 0x2a:
			d.Op = OpUnimpl // SQRTF/SQRTG: VAX formats
		default:
			return Decoded{Op: OpInvalid}, 0
		}
		return d, ExtFIX

	case opc == 0x16:
		fn := fpFunc(w)
		op, ok := fltiOps[fn&0x3f]
		if !ok {
			return Decoded{Op: OpInvalid}, 0
		}
		if op == OpCVTTS && fn&0x300 == 0x200 {
			op = OpCVTST // 0x2AC and 0x6AC share CVTTS's low bits
		}
		return Decoded{Op: op, Ra: ra, Rb: rb, Rc: dest(rc), Qual: uint16(fn >> 6)}, 0

	case opc == 0x17:
		fn := fpFunc(w)
		op, ok := fltlOps[fn]
		if !ok {
			return Decoded{Op: OpInvalid}, 0
		}
		d := Decoded{Op: op, Ra: ra, Rb: rb, Rc: dest(rc), Qual: uint16(fn >> 6)}
		if op == OpMFFPCR {
			d.Ra = dest(ra)
		}
		return d, 0

	case opc == 0x15:
		// VAX floating point: gcc emits none of it for IEEE code.
		return Decoded{Op: OpUnimpl}, 0
	}
	// 0x01-0x07 reserved; 0x19, 0x1B, 0x1D-0x1F are PALcode-only (HW_*).
	return Decoded{Op: OpInvalid}, 0
}

// operate decodes the integer operate format: Ra, Rb or an 8-bit literal,
// Rc.
func operate(w uint32, op Op) Decoded {
	d := Decoded{Op: op, Ra: raOf(w), Rb: rbOf(w), Rc: dest(rcOf(w))}
	if w&(1<<12) != 0 {
		d.Lit = true
		d.Rb = 0
		d.Imm = int32((w >> 13) & 0xff)
	}
	return d
}
