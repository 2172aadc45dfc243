package alpha

// The opcode table the disassembler prints from. It follows the table of
// binutils' opcodes/alpha-opc.c, which alpha-linux-gnu-objdump prints from,
// in the one respect that matters for output: for every instruction word the
// first entry (in table order) whose fixed bits match and whose operand
// constraints hold is the one printed. So a pseudo-instruction ("mov", "clr",
// "negq", "fneg", "unop") comes before the instruction it specialises, and
// an alias listed after its preferred name ("bic" after "andnot") is left
// out because it can never be printed. disasm_test.go checks the table
// against objdump over every opcode and function code.

// disArg is one operand slot of an instruction form.
type disArg uint8

const (
	disArgNone        disArg = iota
	disArgRA                 // integer register, bits 21-25
	disArgRB                 // integer register, bits 16-20
	disArgRC                 // integer register, bits 0-4
	disArgFA                 // FP register, bits 21-25
	disArgFB                 // FP register, bits 16-20
	disArgFC                 // FP register, bits 0-4
	disArgZA                 // not printed: bits 21-25 must be 31
	disArgZB                 // not printed: bits 16-20 must be 31
	disArgZC                 // not printed: bits 0-4 must be 31
	disArgPRB                // "(rb)", no comma before it: the base of a displacement
	disArgCPRB               // ",(rb)": the target register of jmp/jsr/ret
	disArgRBA                // not printed: rb must equal ra
	disArgRCA                // not printed: rc must equal ra
	disArgLIT                // 8-bit unsigned literal, bits 13-20
	disArgMDISP              // 16-bit signed memory displacement
	disArgBDISP              // 21-bit branch displacement, in instructions
	disArgPALFN              // 26-bit PALcode function
	disArgJMPHINT            // 14-bit jump hint, in instructions, printed as an address
	disArgRETHINT            // 14-bit unsigned hint of ret/jcr
	disArgEV4HWDISP          // 12-bit signed displacement of EV4/EV6 hw_ld/hw_st
	disArgEV4HWINDEX         // 5-bit unsigned index of EV4 hw_mfpr/x, hw_mtpr/x
	disArgEV4EXTINDEX        // 8-bit unsigned index of EV4's unqualified hw_mfpr/hw_mtpr
	disArgEV5HWDISP          // 10-bit signed displacement of EV5 hw_ld/hw_st
	disArgEV5HWINDEX         // 16-bit unsigned index of EV5 hw_mfpr/hw_mtpr
	disArgEV6HWINDEX         // 16-bit unsigned index/scoreboard mask of EV6 hw_mfpr/hw_mtpr
	disArgEV6HWHINT          // 13-bit hint of EV6 hw_jmp/hw_jsr, printed as an address
)

// DisasmPAL selects which PALcode-mode instruction mnemonics the
// disassembler knows, as objdump's -m alpha:ev4, alpha:ev5 and alpha:ev6
// do. Those opcodes (0x19, 0x1B, 0x1D, 0x1E, 0x1F) mean different things on
// each chip. objdump's default for an ELF file is DisasmPALNone, which prints
// them as pal19, pal1b, ... with the 26-bit function.
type DisasmPAL uint8

const (
	DisasmPALNone DisasmPAL = iota // objdump -d's default
	DisasmPALEV4                   // 21064 PALcode: hw_ld/p, hw_mfpr/i, hw_rei
	DisasmPALEV5                   // 21164 PALcode: hw_ldl/pa, hw_mfpr, hw_rei_stall
	DisasmPALEV6                   // 21264 PALcode: hw_ldq/w, hw_jmp/stall
	disPALCount
)

// Bits of disInsn.pal: which PALcode machines know an entry.
const (
	disOnEV4 uint8 = 1 << (DisasmPALEV4 - 1)
	disOnEV5 uint8 = 1 << (DisasmPALEV5 - 1)
	disOnEV6 uint8 = 1 << (DisasmPALEV6 - 1)
)

// Constraint bits of disInsn.need, from the unprinted operands.
const (
	disNeedZA  uint8 = 1 << iota // ra == 31
	disNeedZB                    // rb == 31
	disNeedZC                    // rc == 31
	disNeedRBA                   // rb == ra
	disNeedRCA                   // rc == ra
)

// disInsn is one instruction form.
type disInsn struct {
	name  string
	match uint32 // the fixed bits
	mask  uint32 // which bits are fixed
	args  [3]disArg
	nargs uint8
	need  uint8 // constraint bits, derived from args
	pal   uint8 // 0: known on every machine; else disOnEV4|disOnEV5|disOnEV6
	ext   Ext   // the AMASK extension a CPU needs to execute it
	priv  bool  // PALcode-mode only: user code gets OPCDEC
}

// Encoding helpers, after the Alpha Architecture Handbook's formats.
const disOpMask = 0xFC000000

func disOp(op uint32) uint32 { return op << 26 }

// Arguments of the common forms.
var (
	disArgsNone = []disArg{}
	disArgsBra  = []disArg{disArgRA, disArgBDISP}
	disArgsFBra = []disArg{disArgFA, disArgBDISP}
	disArgsFP   = []disArg{disArgFA, disArgFB, disArgFC}
	disArgsFPZ1 = []disArg{disArgZA, disArgFB, disArgFC}
	disArgsMem  = []disArg{disArgRA, disArgMDISP, disArgPRB}
	disArgsFMem = []disArg{disArgFA, disArgMDISP, disArgPRB}
	disArgsOpr  = []disArg{disArgRA, disArgRB, disArgRC}
	disArgsOprL = []disArg{disArgRA, disArgLIT, disArgRC}
	disArgsOZ1  = []disArg{disArgZA, disArgRB, disArgRC}
	disArgsOLZ1 = []disArg{disArgZA, disArgLIT, disArgRC}
	disArgsPCD  = []disArg{disArgPALFN}
	disArgsEV4M = []disArg{disArgRA, disArgEV4HWDISP, disArgPRB}
	disArgsEV5M = []disArg{disArgRA, disArgEV5HWDISP, disArgPRB}
	disArgsEV4P = []disArg{disArgRA, disArgRBA, disArgEV4HWINDEX}
)

// disTableBuilder accumulates entries in table order.
type disTableBuilder struct {
	t []disInsn
}

func (b *disTableBuilder) add(name string, match, mask uint32, ext Ext, args []disArg) *disInsn {
	e := disInsn{name: name, match: match & mask, mask: mask, ext: ext, nargs: uint8(len(args))}
	copy(e.args[:], args)
	for _, a := range args {
		switch a {
		case disArgZA:
			e.need |= disNeedZA
		case disArgZB:
			e.need |= disNeedZB
		case disArgZC:
			e.need |= disNeedZC
		case disArgRBA:
			e.need |= disNeedRBA
		case disArgRCA:
			e.need |= disNeedRCA
		}
	}
	if op := match >> 26; op == 0x19 || op == 0x1B || op == 0x1D || op == 0x1E || op == 0x1F {
		e.priv = true
	}
	b.t = append(b.t, e)
	return &b.t[len(b.t)-1]
}

// Format constructors: each adds one entry.
func (b *disTableBuilder) spcd(name string, op, fn uint32) {
	b.add(name, disOp(op)|fn&0x3FFFFFF, 0xFFFFFFFF, 0, disArgsNone)
}
func (b *disTableBuilder) pcd(name string, op uint32) {
	b.add(name, disOp(op), disOpMask, 0, disArgsPCD)
}
func (b *disTableBuilder) mem(name string, op uint32, ext Ext, args []disArg) {
	b.add(name, disOp(op), disOpMask, ext, args)
}
func (b *disTableBuilder) mfc(name string, op, fn uint32, args []disArg) {
	b.add(name, disOp(op)|fn&0xFFFF, disOpMask|0xFFFF, 0, args)
}
func (b *disTableBuilder) mbr(name string, op, hint uint32, args []disArg) {
	b.add(name, disOp(op)|(hint&3)<<14, disOpMask|0xC000, 0, args)
}
func (b *disTableBuilder) fp(name string, op, fn uint32, ext Ext, args []disArg) {
	b.add(name, disOp(op)|(fn&0x7FF)<<5, disOpMask|0xFFE0, ext, args)
}

// opr adds the register form of an operate instruction; oprl the literal form.
func (b *disTableBuilder) opr(name string, op, fn uint32, ext Ext, args []disArg) {
	b.add(name, disOp(op)|(fn&0x7F)<<5, disOpMask|0x1FE0, ext, args)
}
func (b *disTableBuilder) oprl(name string, op, fn uint32, ext Ext, args []disArg) {
	b.add(name, disOp(op)|(fn&0x7F)<<5|0x1000, disOpMask|0x1FE0, ext, args)
}

// opr2 adds both forms with the usual operands.
func (b *disTableBuilder) opr2(name string, op, fn uint32, ext Ext) {
	b.opr(name, op, fn, ext, disArgsOpr)
	b.oprl(name, op, fn, ext, disArgsOprL)
}

// opr2z1 adds both forms of a one-source pseudo-op (ra must be zero).
func (b *disTableBuilder) opr2z1(name string, op, fn uint32, ext Ext) {
	b.opr(name, op, fn, ext, disArgsOZ1)
	b.oprl(name, op, fn, ext, disArgsOLZ1)
}

// PALcode-mode entries, known only to the named machines.
func (b *disTableBuilder) palEntry(name string, match, mask uint32, on uint8, args []disArg) {
	b.add(name, match, mask, 0, args).pal = on
}

// Floating-point qualifier sets: function-code bits 6-10 to suffix.
type disQual struct {
	bits uint32
	sfx  string
}

// disQualName returns base with its qualifier suffix.
func disQualName(base, sfx string) string {
	if sfx == "" {
		return base
	}
	return base + "/" + sfx
}

// VAX arithmetic and conversions (opcode 0x15): trap /u /s /su, rounding
// chopped (/c) or normal.
var disQualVAX = []disQual{
	{0x000, "c"}, {0x080, ""}, {0x100, "uc"}, {0x180, "u"},
	{0x400, "sc"}, {0x480, "s"}, {0x500, "suc"}, {0x580, "su"},
}

// cvtgq names its integer-overflow trap /v instead of /u.
var disQualVAXV = []disQual{
	{0x000, "c"}, {0x080, ""}, {0x100, "vc"}, {0x180, "v"},
	{0x400, "sc"}, {0x480, "s"}, {0x500, "svc"}, {0x580, "sv"},
}

// disQualIEEE builds the sixteen IEEE qualifier combinations: traps
// none, /u, /su, /sui (or the names given) times rounding /c, /m, normal, /d.
func disQualIEEE(traps [4]string) []disQual {
	trapBits := [4]uint32{0x000, 0x100, 0x500, 0x700}
	rounds := [4]struct {
		bits uint32
		sfx  string
	}{{0x000, "c"}, {0x040, "m"}, {0x080, ""}, {0x0C0, "d"}}
	var q []disQual
	for i, t := range traps {
		if i > 0 && t == "" {
			continue // this trap combination does not exist for the op
		}
		for _, r := range rounds {
			q = append(q, disQual{trapBits[i] | r.bits, t + r.sfx})
		}
	}
	return q
}

var (
	disQualIEEEU  = disQualIEEE([4]string{"", "u", "su", "sui"})
	disQualIEEEV  = disQualIEEE([4]string{"", "v", "sv", "svi"}) // cvttq
	disQualIEEEQ  = disQualIEEE([4]string{"", "", "", "sui"})    // cvtqs, cvtqt
	disQualCmpG   = []disQual{{0x080, ""}, {0x480, "s"}}
	disQualCmpT   = []disQual{{0x080, ""}, {0x580, "su"}}
	disQualCvtQFG = []disQual{{0x000, "c"}, {0x080, ""}}
)

// fpq adds one entry per qualifier. neg, if set, names the pseudo-op
// "neg<x>" that the subtraction becomes when fa is f31; objdump knows it
// only with the qualifier suffixes negSfx lists.
func (b *disTableBuilder) fpq(base string, op, fn uint32, ext Ext, args []disArg, quals []disQual, neg string, negSfx ...string) {
	for _, q := range quals {
		for _, n := range negSfx {
			if n == q.sfx {
				b.fp(disQualName(neg, q.sfx), op, fn|q.bits, ext, disArgsFPZ1)
			}
		}
		b.fp(disQualName(base, q.sfx), op, fn|q.bits, ext, args)
	}
}

// disTable is the opcode table in objdump's order of preference.
var disTable = disBuildTable()

func disBuildTable() []disInsn {
	b := &disTableBuilder{}

	// 0x00: PALcode calls. The named ones are the OSF/1 and Linux
	// unprivileged and common privileged functions.
	b.spcd("halt", 0x00, 0x0000)
	b.spcd("draina", 0x00, 0x0002)
	b.spcd("bpt", 0x00, 0x0080)
	b.spcd("bugchk", 0x00, 0x0081)
	b.spcd("callsys", 0x00, 0x0083)
	b.spcd("imb", 0x00, 0x0086)
	b.spcd("rduniq", 0x00, 0x009e)
	b.spcd("wruniq", 0x00, 0x009f)
	b.spcd("gentrap", 0x00, 0x00aa)
	b.pcd("call_pal", 0x00)

	// Memory format, integer.
	b.mem("lda", 0x08, 0, []disArg{disArgRA, disArgMDISP, disArgZB})
	b.mem("lda", 0x08, 0, disArgsMem)
	b.mem("ldah", 0x09, 0, []disArg{disArgRA, disArgMDISP, disArgZB})
	b.mem("ldah", 0x09, 0, disArgsMem)
	b.mem("ldbu", 0x0A, ExtBWX, disArgsMem)
	// unop is any ldq_u into the zero register: objdump checks only ra.
	b.mem("unop", 0x0B, 0, []disArg{disArgZA})
	b.mem("ldq_u", 0x0B, 0, disArgsMem)
	b.mem("ldwu", 0x0C, ExtBWX, disArgsMem)
	b.mem("stw", 0x0D, ExtBWX, disArgsMem)
	b.mem("stb", 0x0E, ExtBWX, disArgsMem)
	b.mem("stq_u", 0x0F, 0, disArgsMem)

	// 0x10: integer arithmetic.
	b.opr2z1("sextl", 0x10, 0x00, 0)
	b.opr2("addl", 0x10, 0x00, 0)
	b.opr2("s4addl", 0x10, 0x02, 0)
	b.opr2z1("negl", 0x10, 0x09, 0)
	b.opr2("subl", 0x10, 0x09, 0)
	b.opr2("s4subl", 0x10, 0x0B, 0)
	b.opr2("cmpbge", 0x10, 0x0F, 0)
	b.opr2("s8addl", 0x10, 0x12, 0)
	b.opr2("s8subl", 0x10, 0x1B, 0)
	b.opr2("cmpult", 0x10, 0x1D, 0)
	b.opr2("addq", 0x10, 0x20, 0)
	b.opr2("s4addq", 0x10, 0x22, 0)
	b.opr2z1("negq", 0x10, 0x29, 0)
	b.opr2("subq", 0x10, 0x29, 0)
	b.opr2("s4subq", 0x10, 0x2B, 0)
	b.opr2("cmpeq", 0x10, 0x2D, 0)
	b.opr2("s8addq", 0x10, 0x32, 0)
	b.opr2("s8subq", 0x10, 0x3B, 0)
	b.opr2("cmpule", 0x10, 0x3D, 0)
	b.opr2("addl/v", 0x10, 0x40, 0)
	b.opr2z1("negl/v", 0x10, 0x49, 0)
	b.opr2("subl/v", 0x10, 0x49, 0)
	b.opr2("cmplt", 0x10, 0x4D, 0)
	b.opr2("addq/v", 0x10, 0x60, 0)
	b.opr2z1("negq/v", 0x10, 0x69, 0)
	b.opr2("subq/v", 0x10, 0x69, 0)
	b.opr2("cmple", 0x10, 0x6D, 0)

	// 0x11: logical and conditional move.
	b.opr2("and", 0x11, 0x00, 0)
	b.opr2("andnot", 0x11, 0x08, 0) // objdump's name for bic
	b.opr2("cmovlbs", 0x11, 0x14, 0)
	b.opr2("cmovlbc", 0x11, 0x16, 0)
	b.opr("nop", 0x11, 0x20, 0, []disArg{disArgZA, disArgZB, disArgZC})
	b.opr("clr", 0x11, 0x20, 0, []disArg{disArgZA, disArgZB, disArgRC})
	b.opr("mov", 0x11, 0x20, 0, []disArg{disArgZA, disArgRB, disArgRC})
	b.opr("mov", 0x11, 0x20, 0, []disArg{disArgRA, disArgRBA, disArgRC})
	b.oprl("mov", 0x11, 0x20, 0, []disArg{disArgZA, disArgLIT, disArgRC})
	b.opr2("or", 0x11, 0x20, 0) // objdump's name for bis
	b.opr2("cmoveq", 0x11, 0x24, 0)
	b.opr2("cmovne", 0x11, 0x26, 0)
	b.opr2z1("not", 0x11, 0x28, 0)
	b.opr2("ornot", 0x11, 0x28, 0)
	b.opr2("xor", 0x11, 0x40, 0)
	b.opr2("cmovlt", 0x11, 0x44, 0)
	b.opr2("cmovge", 0x11, 0x46, 0)
	b.opr2("eqv", 0x11, 0x48, 0)
	b.opr2z1("amask", 0x11, 0x61, 0)
	b.opr2("cmovle", 0x11, 0x64, 0)
	b.opr2("cmovgt", 0x11, 0x66, 0)
	// implver is the literal form with ra = 31 and literal 1, exactly.
	b.add("implver", disOp(0x11)|0x6C<<5|0x1000|31<<21|1<<13, 0xFFFFFFE0, 0, []disArg{disArgRC})

	// 0x12: shifts and byte manipulation.
	for _, o := range []struct {
		name string
		fn   uint32
	}{
		{"mskbl", 0x02}, {"extbl", 0x06}, {"insbl", 0x0B},
		{"mskwl", 0x12}, {"extwl", 0x16}, {"inswl", 0x1B},
		{"mskll", 0x22}, {"extll", 0x26}, {"insll", 0x2B},
		{"zap", 0x30}, {"zapnot", 0x31}, {"mskql", 0x32}, {"srl", 0x34},
		{"extql", 0x36}, {"sll", 0x39}, {"insql", 0x3B}, {"sra", 0x3C},
		{"mskwh", 0x52}, {"inswh", 0x57}, {"extwh", 0x5A},
		{"msklh", 0x62}, {"inslh", 0x67}, {"extlh", 0x6A},
		{"mskqh", 0x72}, {"insqh", 0x77}, {"extqh", 0x7A},
	} {
		b.opr2(o.name, 0x12, o.fn, 0)
	}

	// 0x13: integer multiply.
	b.opr2("mull", 0x13, 0x00, 0)
	b.opr2("mulq", 0x13, 0x20, 0)
	b.opr2("umulh", 0x13, 0x30, 0)
	b.opr2("mull/v", 0x13, 0x40, 0)
	b.opr2("mulq/v", 0x13, 0x60, 0)

	// 0x14: square roots and integer-to-FP register moves (FIX; binutils
	// files them under CIX).
	itof := []disArg{disArgRA, disArgZB, disArgFC}
	b.fp("itofs", 0x14, 0x004, ExtFIX, itof)
	b.fp("itoff", 0x14, 0x014, ExtFIX, itof)
	b.fp("itoft", 0x14, 0x024, ExtFIX, itof)
	b.fpq("sqrtf", 0x14, 0x00A, ExtFIX, disArgsFPZ1, disQualVAX, "")
	b.fpq("sqrts", 0x14, 0x00B, ExtFIX, disArgsFPZ1, disQualIEEEU, "")
	b.fpq("sqrtg", 0x14, 0x02A, ExtFIX, disArgsFPZ1, disQualVAX, "")
	b.fpq("sqrtt", 0x14, 0x02B, ExtFIX, disArgsFPZ1, disQualIEEEU, "")

	// 0x15: VAX floating point.
	b.fpq("addf", 0x15, 0x000, 0, disArgsFP, disQualVAX, "")
	b.fpq("subf", 0x15, 0x001, 0, disArgsFP, disQualVAX, "negf", "", "s")
	b.fpq("mulf", 0x15, 0x002, 0, disArgsFP, disQualVAX, "")
	b.fpq("divf", 0x15, 0x003, 0, disArgsFP, disQualVAX, "")
	b.fpq("cvtdg", 0x15, 0x01E, 0, disArgsFPZ1, disQualVAX, "")
	b.fpq("addg", 0x15, 0x020, 0, disArgsFP, disQualVAX, "")
	b.fpq("subg", 0x15, 0x021, 0, disArgsFP, disQualVAX, "negg", "", "s")
	b.fpq("mulg", 0x15, 0x022, 0, disArgsFP, disQualVAX, "")
	b.fpq("divg", 0x15, 0x023, 0, disArgsFP, disQualVAX, "")
	b.fpq("cmpgeq", 0x15, 0x025, 0, disArgsFP, disQualCmpG, "")
	b.fpq("cmpglt", 0x15, 0x026, 0, disArgsFP, disQualCmpG, "")
	b.fpq("cmpgle", 0x15, 0x027, 0, disArgsFP, disQualCmpG, "")
	b.fpq("cvtgf", 0x15, 0x02C, 0, disArgsFPZ1, disQualVAX, "")
	b.fpq("cvtgd", 0x15, 0x02D, 0, disArgsFPZ1, disQualVAX, "")
	b.fpq("cvtgq", 0x15, 0x02F, 0, disArgsFPZ1, disQualVAXV, "")
	b.fpq("cvtqf", 0x15, 0x03C, 0, disArgsFPZ1, disQualCvtQFG, "")
	b.fpq("cvtqg", 0x15, 0x03E, 0, disArgsFPZ1, disQualCvtQFG, "")

	// 0x16: IEEE floating point.
	b.fpq("adds", 0x16, 0x000, 0, disArgsFP, disQualIEEEU, "")
	b.fpq("subs", 0x16, 0x001, 0, disArgsFP, disQualIEEEU, "negs", "", "su", "sui")
	b.fpq("muls", 0x16, 0x002, 0, disArgsFP, disQualIEEEU, "")
	b.fpq("divs", 0x16, 0x003, 0, disArgsFP, disQualIEEEU, "")
	b.fpq("addt", 0x16, 0x020, 0, disArgsFP, disQualIEEEU, "")
	b.fpq("subt", 0x16, 0x021, 0, disArgsFP, disQualIEEEU, "negt", "", "su", "sui")
	b.fpq("mult", 0x16, 0x022, 0, disArgsFP, disQualIEEEU, "")
	b.fpq("divt", 0x16, 0x023, 0, disArgsFP, disQualIEEEU, "")
	b.fpq("cmptun", 0x16, 0x024, 0, disArgsFP, disQualCmpT, "")
	b.fpq("cmpteq", 0x16, 0x025, 0, disArgsFP, disQualCmpT, "")
	b.fpq("cmptlt", 0x16, 0x026, 0, disArgsFP, disQualCmpT, "")
	b.fpq("cmptle", 0x16, 0x027, 0, disArgsFP, disQualCmpT, "")
	b.fpq("cvtts", 0x16, 0x02C, 0, disArgsFPZ1, disQualIEEEU, "")
	b.fpq("cvttq", 0x16, 0x02F, 0, disArgsFPZ1, disQualIEEEV, "")
	b.fpq("cvtqs", 0x16, 0x03C, 0, disArgsFPZ1, disQualIEEEQ, "")
	b.fpq("cvtqt", 0x16, 0x03E, 0, disArgsFPZ1, disQualIEEEQ, "")
	b.fp("cvtst", 0x16, 0x2AC, 0, disArgsFPZ1)
	b.fp("cvtst/s", 0x16, 0x6AC, 0, disArgsFPZ1)

	// 0x17: FP datatype-independent.
	b.fp("cvtlq", 0x17, 0x010, 0, disArgsFPZ1)
	b.fp("fnop", 0x17, 0x020, 0, []disArg{disArgZA, disArgZB, disArgZC})
	b.fp("fclr", 0x17, 0x020, 0, []disArg{disArgZA, disArgZB, disArgFC})
	b.fp("fabs", 0x17, 0x020, 0, disArgsFPZ1)
	b.fp("fmov", 0x17, 0x020, 0, []disArg{disArgFA, disArgRBA, disArgFC})
	b.fp("cpys", 0x17, 0x020, 0, disArgsFP)
	b.fp("fneg", 0x17, 0x021, 0, []disArg{disArgFA, disArgRBA, disArgFC})
	b.fp("cpysn", 0x17, 0x021, 0, disArgsFP)
	b.fp("cpyse", 0x17, 0x022, 0, disArgsFP)
	b.fp("mt_fpcr", 0x17, 0x024, 0, []disArg{disArgFA, disArgRBA, disArgRCA})
	b.fp("mf_fpcr", 0x17, 0x025, 0, []disArg{disArgFA, disArgRBA, disArgRCA})
	b.fp("fcmoveq", 0x17, 0x02A, 0, disArgsFP)
	b.fp("fcmovne", 0x17, 0x02B, 0, disArgsFP)
	b.fp("fcmovlt", 0x17, 0x02C, 0, disArgsFP)
	b.fp("fcmovge", 0x17, 0x02D, 0, disArgsFP)
	b.fp("fcmovle", 0x17, 0x02E, 0, disArgsFP)
	b.fp("fcmovgt", 0x17, 0x02F, 0, disArgsFP)
	b.fp("cvtql", 0x17, 0x030, 0, disArgsFPZ1)
	b.fp("cvtql/v", 0x17, 0x130, 0, disArgsFPZ1)
	b.fp("cvtql/sv", 0x17, 0x530, 0, disArgsFPZ1)

	// 0x18: memory format with a function code in the displacement.
	zprb := []disArg{disArgZA, disArgPRB}
	b.mfc("trapb", 0x18, 0x0000, disArgsNone)
	b.mfc("excb", 0x18, 0x0400, disArgsNone)
	b.mfc("mb", 0x18, 0x4000, disArgsNone)
	b.mfc("wmb", 0x18, 0x4400, disArgsNone)
	b.mfc("fetch", 0x18, 0x8000, zprb)
	b.mfc("fetch_m", 0x18, 0xA000, zprb)
	b.mfc("rpcc", 0x18, 0xC000, []disArg{disArgRA, disArgZB})
	b.mfc("rpcc", 0x18, 0xC000, []disArg{disArgRA, disArgRB})
	b.mfc("rc", 0x18, 0xE000, []disArg{disArgRA})
	b.mfc("ecb", 0x18, 0xE800, zprb)
	b.mfc("rs", 0x18, 0xF000, []disArg{disArgRA})
	b.mfc("wh64", 0x18, 0xF800, zprb)
	b.mfc("wh64en", 0x18, 0xFC00, zprb)

	// 0x19: hw_mfpr.
	b.disPALMoveEntries("hw_mfpr", 0x19)
	b.pcd("pal19", 0x19)

	// 0x1A: jumps. The hint is printed as the address it predicts.
	jargs := []disArg{disArgRA, disArgCPRB, disArgJMPHINT}
	rargs := []disArg{disArgRA, disArgCPRB, disArgRETHINT}
	b.add("jmp", disOp(0x1A), disOpMask|0xC000|0x3FFF, 0, []disArg{disArgZA, disArgCPRB})
	b.mbr("jmp", 0x1A, 0, jargs)
	b.mbr("jsr", 0x1A, 1, jargs)
	b.add("ret", disOp(0x1A)|2<<14|31<<21|26<<16|1, 0xFFFFFFFF, 0, disArgsNone)
	b.mbr("ret", 0x1A, 2, rargs)
	b.mbr("jcr", 0x1A, 3, rargs) // objdump's name for jsr_coroutine

	// 0x1B: hw_ld.
	b.disPALLoadStoreEntries(0x1B)
	b.pcd("pal1b", 0x1B)

	// 0x1C: BWX, CIX, MVI and FIX extensions.
	b.opr("sextb", 0x1C, 0x00, ExtBWX, disArgsOZ1)
	b.opr("sextw", 0x1C, 0x01, ExtBWX, disArgsOZ1)
	b.opr("ctpop", 0x1C, 0x30, ExtCIX, disArgsOZ1)
	b.opr("perr", 0x1C, 0x31, ExtMVI, disArgsOpr)
	b.opr("ctlz", 0x1C, 0x32, ExtCIX, disArgsOZ1)
	b.opr("cttz", 0x1C, 0x33, ExtCIX, disArgsOZ1)
	b.opr("unpkbw", 0x1C, 0x34, ExtMVI, disArgsOZ1)
	b.opr("unpkbl", 0x1C, 0x35, ExtMVI, disArgsOZ1)
	b.opr("pkwb", 0x1C, 0x36, ExtMVI, disArgsOZ1)
	b.opr("pklb", 0x1C, 0x37, ExtMVI, disArgsOZ1)
	b.opr2("minsb8", 0x1C, 0x38, ExtMVI)
	b.opr2("minsw4", 0x1C, 0x39, ExtMVI)
	b.opr2("minub8", 0x1C, 0x3A, ExtMVI)
	b.opr2("minuw4", 0x1C, 0x3B, ExtMVI)
	b.opr2("maxub8", 0x1C, 0x3C, ExtMVI)
	b.opr2("maxuw4", 0x1C, 0x3D, ExtMVI)
	b.opr2("maxsb8", 0x1C, 0x3E, ExtMVI)
	b.opr2("maxsw4", 0x1C, 0x3F, ExtMVI)
	ftoi := []disArg{disArgFA, disArgZB, disArgRC}
	b.fp("ftoit", 0x1C, 0x70, ExtFIX, ftoi)
	b.fp("ftois", 0x1C, 0x78, ExtFIX, ftoi)

	// 0x1D: hw_mtpr.
	b.disPALMoveEntries("hw_mtpr", 0x1D)
	b.pcd("pal1d", 0x1D)

	// 0x1E: PALcode return and EV6 PALcode jumps.
	b.palEntry("hw_rei", disOp(0x1E)|0x3FF8000, 0xFFFFFFFF, disOnEV4|disOnEV5, disArgsNone)
	b.palEntry("hw_rei_stall", disOp(0x1E)|0x3FFC000, 0xFFFFFFFF, disOnEV5, disArgsNone)
	for h, name := range []string{"hw_jmp", "hw_jmp/stall", "hw_jsr", "hw_jsr/stall",
		"hw_ret", "hw_ret/stall", "hw_jcr", "hw_jcr/stall"} {
		args := []disArg{disArgZA, disArgPRB}
		if h < 4 {
			args = append(args, disArgEV6HWHINT)
		}
		b.palEntry(name, disOp(0x1E)|uint32(h)<<13, disOpMask|0xE000, disOnEV6, args)
	}
	b.pcd("pal1e", 0x1E)

	// 0x1F: hw_st.
	b.disPALLoadStoreEntries(0x1F)
	b.pcd("pal1f", 0x1F)

	// Memory format, FP and integer.
	for i, name := range []string{"ldf", "ldg", "lds", "ldt", "stf", "stg", "sts", "stt"} {
		b.mem(name, 0x20+uint32(i), 0, disArgsFMem)
	}
	for i, name := range []string{"ldl", "ldq", "ldl_l", "ldq_l", "stl", "stq", "stl_c", "stq_c"} {
		b.mem(name, 0x28+uint32(i), 0, disArgsMem)
	}

	// Branch format.
	b.mem("br", 0x30, 0, []disArg{disArgZA, disArgBDISP})
	for i, name := range []string{"br", "fbeq", "fblt", "fble", "bsr", "fbne", "fbge", "fbgt",
		"blbc", "beq", "blt", "ble", "blbs", "bne", "bge", "bgt"} {
		args := disArgsBra
		if name[0] == 'f' {
			args = disArgsFBra
		}
		b.mem(name, 0x30+uint32(i), 0, args)
	}
	return b.t
}

// disPALMoveEntries adds hw_mfpr (0x19) or hw_mtpr (0x1D) for each chip.
func (b *disTableBuilder) disPALMoveEntries(name string, op uint32) {
	// EV4: the unqualified form carries an 8-bit index; the qualified forms
	// (function 1-7: /i, /a, /ai, /p, /pi, /pa, /pai) a 5-bit one. rb must
	// repeat ra.
	b.palEntry(name, disOp(op), disOpMask|0x1FE0, disOnEV4, []disArg{disArgRA, disArgRBA, disArgEV4EXTINDEX})
	// EV5: the whole low half is the IPR index.
	b.palEntry(name, disOp(op), disOpMask, disOnEV5, []disArg{disArgRA, disArgRBA, disArgEV5HWINDEX})
	// EV6: index and scoreboard mask; hw_mfpr reads into ra (rb zero),
	// hw_mtpr writes from rb (ra zero).
	if op == 0x19 {
		b.palEntry(name, disOp(op), disOpMask, disOnEV6, []disArg{disArgRA, disArgZB, disArgEV6HWINDEX})
	} else {
		b.palEntry(name, disOp(op), disOpMask, disOnEV6, []disArg{disArgZA, disArgRB, disArgEV6HWINDEX})
	}
	for fn, q := range []string{"i", "a", "ai", "p", "pi", "pa", "pai"} {
		b.palEntry(name+"/"+q, disOp(op)|uint32(fn+1)<<5, disOpMask|0x1FE0, disOnEV4, disArgsEV4P)
	}
}

// disPALLoadStoreEntries adds hw_ld (0x1B) or hw_st (0x1F) for each chip.
// Only the forms objdump can print are listed: where binutils' table has
// several names for one encoding, the first wins.
func (b *disTableBuilder) disPALLoadStoreEntries(op uint32) {
	load := op == 0x1B
	kind := func(q bool) string {
		switch {
		case load && q:
			return "hw_ldq"
		case load:
			return "hw_ldl"
		case q:
			return "hw_stq"
		}
		return "hw_stl"
	}
	quals := func(f uint32, bits []disQual) string {
		s := ""
		for _, q := range bits {
			if f&q.bits != 0 {
				s += q.sfx
			}
		}
		return s
	}

	// EV4: four qualifier bits at 12-15: physical, alternate mode, read
	// (write) check, quadword.
	ev4 := []disQual{{8, "p"}, {4, "a"}, {2, "r"}}
	for f := uint32(0); f < 16; f++ {
		name := disQualName(kind(f&1 != 0), quals(f, ev4))
		if !load && f == 0xE {
			// binutils lists hw_stq/par under the encoding of hw_stl/par
			// (which it lacks) as well as its own.
			name = "hw_stq/par"
		}
		b.palEntry(name, disOp(op)|f<<12, disOpMask|0xF000, disOnEV4, disArgsEV4M)
	}

	// EV5: six bits at 10-15: physical, alternate, write check (loads),
	// quadword, virtual PTE fetch, lock/conditional. binutils' mask leaves
	// out bit 10, so the lock/conditional forms print as the plain ones;
	// stores have no write-check form.
	ev5 := []disQual{{0x20, "p"}, {0x10, "a"}, {0x08, "w"}, {0x02, "v"}}
	for f := uint32(0); f < 64; f += 2 {
		if !load && f&0x08 != 0 {
			continue
		}
		name := disQualName(kind(f&4 != 0), quals(f, ev5))
		b.palEntry(name, disOp(op)|f<<10, disOpMask|0xF800, disOnEV5, disArgsEV5M)
	}

	// EV6: four bits at 12-15, one name per encoding.
	var ev6 []struct {
		f    uint32
		name string
	}
	if load {
		ev6 = []struct {
			f    uint32
			name string
		}{
			{0x8, "hw_ldl"}, {0xC, "hw_ldl/a"}, {0x0, "hw_ldl/p"}, {0x4, "hw_ldl/v"},
			{0xA, "hw_ldl/w"}, {0xE, "hw_ldl/wa"}, {0x2, "hw_ldl_l/p"},
			{0x9, "hw_ldq"}, {0xD, "hw_ldq/a"}, {0x1, "hw_ldq/p"}, {0x5, "hw_ldq/v"},
			{0xB, "hw_ldq/w"}, {0xF, "hw_ldq/wa"}, {0x3, "hw_ldq_l/p"},
		}
	} else {
		ev6 = []struct {
			f    uint32
			name string
		}{
			{0x4, "hw_stl"}, {0xC, "hw_stl/a"}, {0x0, "hw_stl/p"}, {0x2, "hw_stl_c/p"},
			{0x5, "hw_stq"}, {0xD, "hw_stq/a"}, {0x1, "hw_stq/p"}, {0x3, "hw_stq_c/p"},
		}
	}
	for _, e := range ev6 {
		b.palEntry(e.name, disOp(op)|e.f<<12, disOpMask|0xF000, disOnEV6, disArgsEV4M)
	}
}
