package disasm

import "dcpi/hwsim/alpha"

// The opcode table the disassembler prints from. It follows the table of
// binutils' opcodes/alpha-opc.c, which alpha-linux-gnu-objdump prints from,
// in the one respect that matters for output: for every instruction word the
// first entry (in table order) whose fixed bits match and whose operand
// constraints hold is the one printed. So a pseudo-instruction ("mov", "clr",
// "negq", "fneg", "unop") comes before the instruction it specialises, and
// an alias listed after its preferred name ("bic" after "andnot") is left
// out because it can never be printed. sweep_test.go checks the table
// against objdump over every opcode and function code.

// arg is one operand slot of an instruction form.
type arg uint8

const (
	argNone        arg = iota
	argRA              // integer register, bits 21-25
	argRB              // integer register, bits 16-20
	argRC              // integer register, bits 0-4
	argFA              // FP register, bits 21-25
	argFB              // FP register, bits 16-20
	argFC              // FP register, bits 0-4
	argZA              // not printed: bits 21-25 must be 31
	argZB              // not printed: bits 16-20 must be 31
	argZC              // not printed: bits 0-4 must be 31
	argPRB             // "(rb)", no comma before it: the base of a displacement
	argCPRB            // ",(rb)": the target register of jmp/jsr/ret
	argRBA             // not printed: rb must equal ra
	argRCA             // not printed: rc must equal ra
	argLIT             // 8-bit unsigned literal, bits 13-20
	argMDISP           // 16-bit signed memory displacement
	argBDISP           // 21-bit branch displacement, in instructions
	argPALFN           // 26-bit PALcode function
	argJMPHINT         // 14-bit jump hint, in instructions, printed as an address
	argRETHINT         // 14-bit unsigned hint of ret/jcr
	argEV4HWDISP       // 12-bit signed displacement of EV4/EV6 hw_ld/hw_st
	argEV4HWINDEX      // 5-bit unsigned index of EV4 hw_mfpr/x, hw_mtpr/x
	argEV4EXTINDEX     // 8-bit unsigned index of EV4's unqualified hw_mfpr/hw_mtpr
	argEV5HWDISP       // 10-bit signed displacement of EV5 hw_ld/hw_st
	argEV5HWINDEX      // 16-bit unsigned index of EV5 hw_mfpr/hw_mtpr
	argEV6HWINDEX      // 16-bit unsigned index/scoreboard mask of EV6 hw_mfpr/hw_mtpr
	argEV6HWHINT       // 13-bit hint of EV6 hw_jmp/hw_jsr, printed as an address
)

// PAL selects which PALcode-mode instruction mnemonics the
// disassembler knows, as objdump's -m alpha:ev4, alpha:ev5 and alpha:ev6
// do. Those opcodes (0x19, 0x1B, 0x1D, 0x1E, 0x1F) mean different things on
// each chip. objdump's default for an ELF file is PALNone, which prints
// them as pal19, pal1b, ... with the 26-bit function.
type PAL uint8

const (
	PALNone PAL = iota // objdump -d's default
	PALEV4             // 21064 PALcode: hw_ld/p, hw_mfpr/i, hw_rei
	PALEV5             // 21164 PALcode: hw_ldl/pa, hw_mfpr, hw_rei_stall
	PALEV6             // 21264 PALcode: hw_ldq/w, hw_jmp/stall
	pALCount
)

// Bits of insn.pal: which PALcode machines know an entry.
const (
	onEV4 uint8 = 1 << (PALEV4 - 1)
	onEV5 uint8 = 1 << (PALEV5 - 1)
	onEV6 uint8 = 1 << (PALEV6 - 1)
)

// Constraint bits of insn.need, from the unprinted operands.
const (
	needZA  uint8 = 1 << iota // ra == 31
	needZB                    // rb == 31
	needZC                    // rc == 31
	needRBA                   // rb == ra
	needRCA                   // rc == ra
)

// insn is one instruction form.
type insn struct {
	name  string
	match uint32 // the fixed bits
	mask  uint32 // which bits are fixed
	args  [3]arg
	nargs uint8
	need  uint8     // constraint bits, derived from args
	pal   uint8     // 0: known on every machine; else onEV4|onEV5|onEV6
	ext   alpha.Ext // the AMASK extension a CPU needs to execute it
	priv  bool      // PALcode-mode only: user code gets OPCDEC
}

// Encoding helpers, after the Alpha Architecture Handbook's formats.
const opMask = 0xFC000000

func opBits(op uint32) uint32 { return op << 26 }

// Arguments of the common forms.
var (
	argsNone = []arg{}
	argsBra  = []arg{argRA, argBDISP}
	argsFBra = []arg{argFA, argBDISP}
	argsFP   = []arg{argFA, argFB, argFC}
	argsFPZ1 = []arg{argZA, argFB, argFC}
	argsMem  = []arg{argRA, argMDISP, argPRB}
	argsFMem = []arg{argFA, argMDISP, argPRB}
	argsOpr  = []arg{argRA, argRB, argRC}
	argsOprL = []arg{argRA, argLIT, argRC}
	argsOZ1  = []arg{argZA, argRB, argRC}
	argsOLZ1 = []arg{argZA, argLIT, argRC}
	argsPCD  = []arg{argPALFN}
	argsEV4M = []arg{argRA, argEV4HWDISP, argPRB}
	argsEV5M = []arg{argRA, argEV5HWDISP, argPRB}
	argsEV4P = []arg{argRA, argRBA, argEV4HWINDEX}
)

// tableBuilder accumulates entries in table order.
type tableBuilder struct {
	t []insn
}

func (b *tableBuilder) add(name string, match, mask uint32, ext alpha.Ext, args []arg) *insn {
	e := insn{name: name, match: match & mask, mask: mask, ext: ext, nargs: uint8(len(args))}
	copy(e.args[:], args)
	for _, a := range args {
		switch a {
		case argZA:
			e.need |= needZA
		case argZB:
			e.need |= needZB
		case argZC:
			e.need |= needZC
		case argRBA:
			e.need |= needRBA
		case argRCA:
			e.need |= needRCA
		}
	}
	if op := match >> 26; op == 0x19 || op == 0x1B || op == 0x1D || op == 0x1E || op == 0x1F {
		e.priv = true
	}
	b.t = append(b.t, e)
	return &b.t[len(b.t)-1]
}

// Format constructors: each adds one entry.
func (b *tableBuilder) spcd(name string, op, fn uint32) {
	b.add(name, opBits(op)|fn&0x3FFFFFF, 0xFFFFFFFF, 0, argsNone)
}
func (b *tableBuilder) pcd(name string, op uint32) {
	b.add(name, opBits(op), opMask, 0, argsPCD)
}
func (b *tableBuilder) mem(name string, op uint32, ext alpha.Ext, args []arg) {
	b.add(name, opBits(op), opMask, ext, args)
}
func (b *tableBuilder) mfc(name string, op, fn uint32, args []arg) {
	b.add(name, opBits(op)|fn&0xFFFF, opMask|0xFFFF, 0, args)
}
func (b *tableBuilder) mbr(name string, op, hint uint32, args []arg) {
	b.add(name, opBits(op)|(hint&3)<<14, opMask|0xC000, 0, args)
}
func (b *tableBuilder) fp(name string, op, fn uint32, ext alpha.Ext, args []arg) {
	b.add(name, opBits(op)|(fn&0x7FF)<<5, opMask|0xFFE0, ext, args)
}

// opr adds the register form of an operate instruction; oprl the literal form.
func (b *tableBuilder) opr(name string, op, fn uint32, ext alpha.Ext, args []arg) {
	b.add(name, opBits(op)|(fn&0x7F)<<5, opMask|0x1FE0, ext, args)
}
func (b *tableBuilder) oprl(name string, op, fn uint32, ext alpha.Ext, args []arg) {
	b.add(name, opBits(op)|(fn&0x7F)<<5|0x1000, opMask|0x1FE0, ext, args)
}

// opr2 adds both forms with the usual operands.
func (b *tableBuilder) opr2(name string, op, fn uint32, ext alpha.Ext) {
	b.opr(name, op, fn, ext, argsOpr)
	b.oprl(name, op, fn, ext, argsOprL)
}

// opr2z1 adds both forms of a one-source pseudo-op (ra must be zero).
func (b *tableBuilder) opr2z1(name string, op, fn uint32, ext alpha.Ext) {
	b.opr(name, op, fn, ext, argsOZ1)
	b.oprl(name, op, fn, ext, argsOLZ1)
}

// PALcode-mode entries, known only to the named machines.
func (b *tableBuilder) palEntry(name string, match, mask uint32, on uint8, args []arg) {
	b.add(name, match, mask, 0, args).pal = on
}

// Floating-point qualifier sets: function-code bits 6-10 to suffix.
type qual struct {
	bits uint32
	sfx  string
}

// qualName returns base with its qualifier suffix.
func qualName(base, sfx string) string {
	if sfx == "" {
		return base
	}
	return base + "/" + sfx
}

// VAX arithmetic and conversions (opcode 0x15): trap /u /s /su, rounding
// chopped (/c) or normal.
var qualVAX = []qual{
	{0x000, "c"}, {0x080, ""}, {0x100, "uc"}, {0x180, "u"},
	{0x400, "sc"}, {0x480, "s"}, {0x500, "suc"}, {0x580, "su"},
}

// cvtgq names its integer-overflow trap /v instead of /u.
var qualVAXV = []qual{
	{0x000, "c"}, {0x080, ""}, {0x100, "vc"}, {0x180, "v"},
	{0x400, "sc"}, {0x480, "s"}, {0x500, "svc"}, {0x580, "sv"},
}

// qualIEEE builds the sixteen IEEE qualifier combinations: traps
// none, /u, /su, /sui (or the names given) times rounding /c, /m, normal, /d.
func qualIEEE(traps [4]string) []qual {
	trapBits := [4]uint32{0x000, 0x100, 0x500, 0x700}
	rounds := [4]struct {
		bits uint32
		sfx  string
	}{{0x000, "c"}, {0x040, "m"}, {0x080, ""}, {0x0C0, "d"}}
	var q []qual
	for i, t := range traps {
		if i > 0 && t == "" {
			continue // this trap combination does not exist for the op
		}
		for _, r := range rounds {
			q = append(q, qual{trapBits[i] | r.bits, t + r.sfx})
		}
	}
	return q
}

var (
	qualIEEEU  = qualIEEE([4]string{"", "u", "su", "sui"})
	qualIEEEV  = qualIEEE([4]string{"", "v", "sv", "svi"}) // cvttq
	qualIEEEQ  = qualIEEE([4]string{"", "", "", "sui"})    // cvtqs, cvtqt
	qualCmpG   = []qual{{0x080, ""}, {0x480, "s"}}
	qualCmpT   = []qual{{0x080, ""}, {0x580, "su"}}
	qualCvtQFG = []qual{{0x000, "c"}, {0x080, ""}}
)

// fpq adds one entry per qualifier. neg, if set, names the pseudo-op
// "neg<x>" that the subtraction becomes when fa is f31; objdump knows it
// only with the qualifier suffixes negSfx lists.
func (b *tableBuilder) fpq(base string, op, fn uint32, ext alpha.Ext, args []arg, quals []qual, neg string, negSfx ...string) {
	for _, q := range quals {
		for _, n := range negSfx {
			if n == q.sfx {
				b.fp(qualName(neg, q.sfx), op, fn|q.bits, ext, argsFPZ1)
			}
		}
		b.fp(qualName(base, q.sfx), op, fn|q.bits, ext, args)
	}
}

// table is the opcode table in objdump's order of preference.
var table = buildTable()

func buildTable() []insn {
	b := &tableBuilder{}

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
	b.mem("lda", 0x08, 0, []arg{argRA, argMDISP, argZB})
	b.mem("lda", 0x08, 0, argsMem)
	b.mem("ldah", 0x09, 0, []arg{argRA, argMDISP, argZB})
	b.mem("ldah", 0x09, 0, argsMem)
	b.mem("ldbu", 0x0A, alpha.ExtBWX, argsMem)
	// unop is any ldq_u into the zero register: objdump checks only ra.
	b.mem("unop", 0x0B, 0, []arg{argZA})
	b.mem("ldq_u", 0x0B, 0, argsMem)
	b.mem("ldwu", 0x0C, alpha.ExtBWX, argsMem)
	b.mem("stw", 0x0D, alpha.ExtBWX, argsMem)
	b.mem("stb", 0x0E, alpha.ExtBWX, argsMem)
	b.mem("stq_u", 0x0F, 0, argsMem)

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
	b.opr("nop", 0x11, 0x20, 0, []arg{argZA, argZB, argZC})
	b.opr("clr", 0x11, 0x20, 0, []arg{argZA, argZB, argRC})
	b.opr("mov", 0x11, 0x20, 0, []arg{argZA, argRB, argRC})
	b.opr("mov", 0x11, 0x20, 0, []arg{argRA, argRBA, argRC})
	b.oprl("mov", 0x11, 0x20, 0, []arg{argZA, argLIT, argRC})
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
	b.add("implver", opBits(0x11)|0x6C<<5|0x1000|31<<21|1<<13, 0xFFFFFFE0, 0, []arg{argRC})

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
	itof := []arg{argRA, argZB, argFC}
	b.fp("itofs", 0x14, 0x004, alpha.ExtFIX, itof)
	b.fp("itoff", 0x14, 0x014, alpha.ExtFIX, itof)
	b.fp("itoft", 0x14, 0x024, alpha.ExtFIX, itof)
	b.fpq("sqrtf", 0x14, 0x00A, alpha.ExtFIX, argsFPZ1, qualVAX, "")
	b.fpq("sqrts", 0x14, 0x00B, alpha.ExtFIX, argsFPZ1, qualIEEEU, "")
	b.fpq("sqrtg", 0x14, 0x02A, alpha.ExtFIX, argsFPZ1, qualVAX, "")
	b.fpq("sqrtt", 0x14, 0x02B, alpha.ExtFIX, argsFPZ1, qualIEEEU, "")

	// 0x15: VAX floating point.
	b.fpq("addf", 0x15, 0x000, 0, argsFP, qualVAX, "")
	b.fpq("subf", 0x15, 0x001, 0, argsFP, qualVAX, "negf", "", "s")
	b.fpq("mulf", 0x15, 0x002, 0, argsFP, qualVAX, "")
	b.fpq("divf", 0x15, 0x003, 0, argsFP, qualVAX, "")
	b.fpq("cvtdg", 0x15, 0x01E, 0, argsFPZ1, qualVAX, "")
	b.fpq("addg", 0x15, 0x020, 0, argsFP, qualVAX, "")
	b.fpq("subg", 0x15, 0x021, 0, argsFP, qualVAX, "negg", "", "s")
	b.fpq("mulg", 0x15, 0x022, 0, argsFP, qualVAX, "")
	b.fpq("divg", 0x15, 0x023, 0, argsFP, qualVAX, "")
	b.fpq("cmpgeq", 0x15, 0x025, 0, argsFP, qualCmpG, "")
	b.fpq("cmpglt", 0x15, 0x026, 0, argsFP, qualCmpG, "")
	b.fpq("cmpgle", 0x15, 0x027, 0, argsFP, qualCmpG, "")
	b.fpq("cvtgf", 0x15, 0x02C, 0, argsFPZ1, qualVAX, "")
	b.fpq("cvtgd", 0x15, 0x02D, 0, argsFPZ1, qualVAX, "")
	b.fpq("cvtgq", 0x15, 0x02F, 0, argsFPZ1, qualVAXV, "")
	b.fpq("cvtqf", 0x15, 0x03C, 0, argsFPZ1, qualCvtQFG, "")
	b.fpq("cvtqg", 0x15, 0x03E, 0, argsFPZ1, qualCvtQFG, "")

	// 0x16: IEEE floating point.
	b.fpq("adds", 0x16, 0x000, 0, argsFP, qualIEEEU, "")
	b.fpq("subs", 0x16, 0x001, 0, argsFP, qualIEEEU, "negs", "", "su", "sui")
	b.fpq("muls", 0x16, 0x002, 0, argsFP, qualIEEEU, "")
	b.fpq("divs", 0x16, 0x003, 0, argsFP, qualIEEEU, "")
	b.fpq("addt", 0x16, 0x020, 0, argsFP, qualIEEEU, "")
	b.fpq("subt", 0x16, 0x021, 0, argsFP, qualIEEEU, "negt", "", "su", "sui")
	b.fpq("mult", 0x16, 0x022, 0, argsFP, qualIEEEU, "")
	b.fpq("divt", 0x16, 0x023, 0, argsFP, qualIEEEU, "")
	b.fpq("cmptun", 0x16, 0x024, 0, argsFP, qualCmpT, "")
	b.fpq("cmpteq", 0x16, 0x025, 0, argsFP, qualCmpT, "")
	b.fpq("cmptlt", 0x16, 0x026, 0, argsFP, qualCmpT, "")
	b.fpq("cmptle", 0x16, 0x027, 0, argsFP, qualCmpT, "")
	b.fpq("cvtts", 0x16, 0x02C, 0, argsFPZ1, qualIEEEU, "")
	b.fpq("cvttq", 0x16, 0x02F, 0, argsFPZ1, qualIEEEV, "")
	b.fpq("cvtqs", 0x16, 0x03C, 0, argsFPZ1, qualIEEEQ, "")
	b.fpq("cvtqt", 0x16, 0x03E, 0, argsFPZ1, qualIEEEQ, "")
	b.fp("cvtst", 0x16, 0x2AC, 0, argsFPZ1)
	b.fp("cvtst/s", 0x16, 0x6AC, 0, argsFPZ1)

	// 0x17: FP datatype-independent.
	b.fp("cvtlq", 0x17, 0x010, 0, argsFPZ1)
	b.fp("fnop", 0x17, 0x020, 0, []arg{argZA, argZB, argZC})
	b.fp("fclr", 0x17, 0x020, 0, []arg{argZA, argZB, argFC})
	b.fp("fabs", 0x17, 0x020, 0, argsFPZ1)
	b.fp("fmov", 0x17, 0x020, 0, []arg{argFA, argRBA, argFC})
	b.fp("cpys", 0x17, 0x020, 0, argsFP)
	b.fp("fneg", 0x17, 0x021, 0, []arg{argFA, argRBA, argFC})
	b.fp("cpysn", 0x17, 0x021, 0, argsFP)
	b.fp("cpyse", 0x17, 0x022, 0, argsFP)
	b.fp("mt_fpcr", 0x17, 0x024, 0, []arg{argFA, argRBA, argRCA})
	b.fp("mf_fpcr", 0x17, 0x025, 0, []arg{argFA, argRBA, argRCA})
	b.fp("fcmoveq", 0x17, 0x02A, 0, argsFP)
	b.fp("fcmovne", 0x17, 0x02B, 0, argsFP)
	b.fp("fcmovlt", 0x17, 0x02C, 0, argsFP)
	b.fp("fcmovge", 0x17, 0x02D, 0, argsFP)
	b.fp("fcmovle", 0x17, 0x02E, 0, argsFP)
	b.fp("fcmovgt", 0x17, 0x02F, 0, argsFP)
	b.fp("cvtql", 0x17, 0x030, 0, argsFPZ1)
	b.fp("cvtql/v", 0x17, 0x130, 0, argsFPZ1)
	b.fp("cvtql/sv", 0x17, 0x530, 0, argsFPZ1)

	// 0x18: memory format with a function code in the displacement.
	zprb := []arg{argZA, argPRB}
	b.mfc("trapb", 0x18, 0x0000, argsNone)
	b.mfc("excb", 0x18, 0x0400, argsNone)
	b.mfc("mb", 0x18, 0x4000, argsNone)
	b.mfc("wmb", 0x18, 0x4400, argsNone)
	b.mfc("fetch", 0x18, 0x8000, zprb)
	b.mfc("fetch_m", 0x18, 0xA000, zprb)
	b.mfc("rpcc", 0x18, 0xC000, []arg{argRA, argZB})
	b.mfc("rpcc", 0x18, 0xC000, []arg{argRA, argRB})
	b.mfc("rc", 0x18, 0xE000, []arg{argRA})
	b.mfc("ecb", 0x18, 0xE800, zprb)
	b.mfc("rs", 0x18, 0xF000, []arg{argRA})
	b.mfc("wh64", 0x18, 0xF800, zprb)
	b.mfc("wh64en", 0x18, 0xFC00, zprb)

	// 0x19: hw_mfpr.
	b.pALMoveEntries("hw_mfpr", 0x19)
	b.pcd("pal19", 0x19)

	// 0x1A: jumps. The hint is printed as the address it predicts.
	jargs := []arg{argRA, argCPRB, argJMPHINT}
	rargs := []arg{argRA, argCPRB, argRETHINT}
	b.add("jmp", opBits(0x1A), opMask|0xC000|0x3FFF, 0, []arg{argZA, argCPRB})
	b.mbr("jmp", 0x1A, 0, jargs)
	b.mbr("jsr", 0x1A, 1, jargs)
	b.add("ret", opBits(0x1A)|2<<14|31<<21|26<<16|1, 0xFFFFFFFF, 0, argsNone)
	b.mbr("ret", 0x1A, 2, rargs)
	b.mbr("jcr", 0x1A, 3, rargs) // objdump's name for jsr_coroutine

	// 0x1B: hw_ld.
	b.pALLoadStoreEntries(0x1B)
	b.pcd("pal1b", 0x1B)

	// 0x1C: BWX, CIX, MVI and FIX extensions.
	b.opr("sextb", 0x1C, 0x00, alpha.ExtBWX, argsOZ1)
	b.opr("sextw", 0x1C, 0x01, alpha.ExtBWX, argsOZ1)
	b.opr("ctpop", 0x1C, 0x30, alpha.ExtCIX, argsOZ1)
	b.opr("perr", 0x1C, 0x31, alpha.ExtMVI, argsOpr)
	b.opr("ctlz", 0x1C, 0x32, alpha.ExtCIX, argsOZ1)
	b.opr("cttz", 0x1C, 0x33, alpha.ExtCIX, argsOZ1)
	b.opr("unpkbw", 0x1C, 0x34, alpha.ExtMVI, argsOZ1)
	b.opr("unpkbl", 0x1C, 0x35, alpha.ExtMVI, argsOZ1)
	b.opr("pkwb", 0x1C, 0x36, alpha.ExtMVI, argsOZ1)
	b.opr("pklb", 0x1C, 0x37, alpha.ExtMVI, argsOZ1)
	b.opr2("minsb8", 0x1C, 0x38, alpha.ExtMVI)
	b.opr2("minsw4", 0x1C, 0x39, alpha.ExtMVI)
	b.opr2("minub8", 0x1C, 0x3A, alpha.ExtMVI)
	b.opr2("minuw4", 0x1C, 0x3B, alpha.ExtMVI)
	b.opr2("maxub8", 0x1C, 0x3C, alpha.ExtMVI)
	b.opr2("maxuw4", 0x1C, 0x3D, alpha.ExtMVI)
	b.opr2("maxsb8", 0x1C, 0x3E, alpha.ExtMVI)
	b.opr2("maxsw4", 0x1C, 0x3F, alpha.ExtMVI)
	ftoi := []arg{argFA, argZB, argRC}
	b.fp("ftoit", 0x1C, 0x70, alpha.ExtFIX, ftoi)
	b.fp("ftois", 0x1C, 0x78, alpha.ExtFIX, ftoi)

	// 0x1D: hw_mtpr.
	b.pALMoveEntries("hw_mtpr", 0x1D)
	b.pcd("pal1d", 0x1D)

	// 0x1E: PALcode return and EV6 PALcode jumps.
	b.palEntry("hw_rei", opBits(0x1E)|0x3FF8000, 0xFFFFFFFF, onEV4|onEV5, argsNone)
	b.palEntry("hw_rei_stall", opBits(0x1E)|0x3FFC000, 0xFFFFFFFF, onEV5, argsNone)
	for h, name := range []string{"hw_jmp", "hw_jmp/stall", "hw_jsr", "hw_jsr/stall",
		"hw_ret", "hw_ret/stall", "hw_jcr", "hw_jcr/stall"} {
		args := []arg{argZA, argPRB}
		if h < 4 {
			args = append(args, argEV6HWHINT)
		}
		b.palEntry(name, opBits(0x1E)|uint32(h)<<13, opMask|0xE000, onEV6, args)
	}
	b.pcd("pal1e", 0x1E)

	// 0x1F: hw_st.
	b.pALLoadStoreEntries(0x1F)
	b.pcd("pal1f", 0x1F)

	// Memory format, FP and integer.
	for i, name := range []string{"ldf", "ldg", "lds", "ldt", "stf", "stg", "sts", "stt"} {
		b.mem(name, 0x20+uint32(i), 0, argsFMem)
	}
	for i, name := range []string{"ldl", "ldq", "ldl_l", "ldq_l", "stl", "stq", "stl_c", "stq_c"} {
		b.mem(name, 0x28+uint32(i), 0, argsMem)
	}

	// Branch format.
	b.mem("br", 0x30, 0, []arg{argZA, argBDISP})
	for i, name := range []string{"br", "fbeq", "fblt", "fble", "bsr", "fbne", "fbge", "fbgt",
		"blbc", "beq", "blt", "ble", "blbs", "bne", "bge", "bgt"} {
		args := argsBra
		if name[0] == 'f' {
			args = argsFBra
		}
		b.mem(name, 0x30+uint32(i), 0, args)
	}
	return b.t
}

// pALMoveEntries adds hw_mfpr (0x19) or hw_mtpr (0x1D) for each chip.
func (b *tableBuilder) pALMoveEntries(name string, op uint32) {
	// EV4: the unqualified form carries an 8-bit index; the qualified forms
	// (function 1-7: /i, /a, /ai, /p, /pi, /pa, /pai) a 5-bit one. rb must
	// repeat ra.
	b.palEntry(name, opBits(op), opMask|0x1FE0, onEV4, []arg{argRA, argRBA, argEV4EXTINDEX})
	// EV5: the whole low half is the IPR index.
	b.palEntry(name, opBits(op), opMask, onEV5, []arg{argRA, argRBA, argEV5HWINDEX})
	// EV6: index and scoreboard mask; hw_mfpr reads into ra (rb zero),
	// hw_mtpr writes from rb (ra zero).
	if op == 0x19 {
		b.palEntry(name, opBits(op), opMask, onEV6, []arg{argRA, argZB, argEV6HWINDEX})
	} else {
		b.palEntry(name, opBits(op), opMask, onEV6, []arg{argZA, argRB, argEV6HWINDEX})
	}
	for fn, q := range []string{"i", "a", "ai", "p", "pi", "pa", "pai"} {
		b.palEntry(name+"/"+q, opBits(op)|uint32(fn+1)<<5, opMask|0x1FE0, onEV4, argsEV4P)
	}
}

// pALLoadStoreEntries adds hw_ld (0x1B) or hw_st (0x1F) for each chip.
// Only the forms objdump can print are listed: where binutils' table has
// several names for one encoding, the first wins.
func (b *tableBuilder) pALLoadStoreEntries(op uint32) {
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
	quals := func(f uint32, bits []qual) string {
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
	ev4 := []qual{{8, "p"}, {4, "a"}, {2, "r"}}
	for f := uint32(0); f < 16; f++ {
		name := qualName(kind(f&1 != 0), quals(f, ev4))
		if !load && f == 0xE {
			// binutils lists hw_stq/par under the encoding of hw_stl/par
			// (which it lacks) as well as its own.
			name = "hw_stq/par"
		}
		b.palEntry(name, opBits(op)|f<<12, opMask|0xF000, onEV4, argsEV4M)
	}

	// EV5: six bits at 10-15: physical, alternate, write check (loads),
	// quadword, virtual PTE fetch, lock/conditional. binutils' mask leaves
	// out bit 10, so the lock/conditional forms print as the plain ones;
	// stores have no write-check form.
	ev5 := []qual{{0x20, "p"}, {0x10, "a"}, {0x08, "w"}, {0x02, "v"}}
	for f := uint32(0); f < 64; f += 2 {
		if !load && f&0x08 != 0 {
			continue
		}
		name := qualName(kind(f&4 != 0), quals(f, ev5))
		b.palEntry(name, opBits(op)|f<<10, opMask|0xF800, onEV5, argsEV5M)
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
		b.palEntry(e.name, opBits(op)|e.f<<12, opMask|0xF000, onEV6, argsEV4M)
	}
}
