package alpha

import "strings"

// FPCR is the floating-point control register (Alpha Architecture Handbook
// v4, sec. 4.7.8, figure 4-1). Bits 0-46 read as zero. The bit names are the
// handbook's; Linux's <asm/fpu.h> uses the same layout.
type FPCR uint64

// FPCR bits.
const (
	FPCRDnoD FPCR = 1 << 47 // denormal operand trap disable (21264 and later)
	FPCRDnz  FPCR = 1 << 48 // denormal operands are read as zeros of the same sign
	FPCRInvD FPCR = 1 << 49 // invalid operation trap disable
	FPCRDzeD FPCR = 1 << 50 // division by zero trap disable
	FPCROvfD FPCR = 1 << 51 // overflow trap disable
	FPCRInv  FPCR = 1 << 52 // status: invalid operation
	FPCRDze  FPCR = 1 << 53 // status: division by zero
	FPCROvf  FPCR = 1 << 54 // status: overflow
	FPCRUnf  FPCR = 1 << 55 // status: underflow
	FPCRIne  FPCR = 1 << 56 // status: inexact
	FPCRIov  FPCR = 1 << 57 // status: integer overflow
	FPCRUndz FPCR = 1 << 60 // with UnfD: an underflowing result is a true zero
	FPCRUnfD FPCR = 1 << 61 // underflow trap disable
	FPCRIneD FPCR = 1 << 62 // inexact trap disable
	FPCRSum  FPCR = 1 << 63 // summary: OR of the six status bits

	FPCRDynShift        = 58
	FPCRDynMask    FPCR = 3 << FPCRDynShift
	FPCRDynChopped FPCR = FPCR(Chopped) << FPCRDynShift
	FPCRDynMinus   FPCR = FPCR(MinusInf) << FPCRDynShift
	FPCRDynNormal  FPCR = FPCR(Nearest) << FPCRDynShift
	FPCRDynPlus    FPCR = FPCR(PlusInf) << FPCRDynShift

	// FPCRStatus is the six sticky exception status bits.
	FPCRStatus = FPCRInv | FPCRDze | FPCROvf | FPCRUnf | FPCRIne | FPCRIov

	// FPCRTrapsDisabled is every trap-disable bit: what Linux writes at exec
	// (ieee_swcr_to_fpcr(0) in arch/alpha/include/uapi/asm/fpu.h) and what
	// qemu-alpha starts user programs with.
	FPCRTrapsDisabled = FPCRInvD | FPCRDzeD | FPCROvfD | FPCRUnfD | FPCRIneD | FPCRDnoD
)

// RoundingMode is the dynamic rounding mode, used by /D instructions.
func (c FPCR) RoundingMode() Rounding { return Rounding(c>>FPCRDynShift) & 3 }

// Status is the sticky exception status as an Exc set.
func (c FPCR) Status() Exc { return Exc(c >> 52 & 0x3f) }

// Record sets the status bits of e, and SUM, in the FPCR. Status bits are
// sticky: only MT_FPCR clears them.
func (c *FPCR) Record(e Exc) {
	if e != 0 {
		*c |= FPCR(e)<<52 | FPCRSum
	}
}

// flushUnderflow reports whether the FPCR asks for underflowing results to
// be true zeros (handbook sec. 4.7.7.11: UNDZ takes effect together with
// UNFD).
func (c FPCR) flushUnderflow() bool { return c&(FPCRUndz|FPCRUnfD) == FPCRUndz|FPCRUnfD }

// Rounding is an IEEE rounding direction, numbered as both the FPCR's DYN
// field and the instruction rounding qualifier (handbook table 4-11) number
// it, so conversions between them are free.
//
// FlushUnderflow may be ORed into a Rounding passed to the arithmetic
// functions: it says the instruction lacks /U, so an underflowing result is
// a true zero (handbook sec. 4.7.7.7). The functions look only at the low two
// bits for the direction.
type Rounding uint8

const (
	Chopped  Rounding = 0 // toward zero (/C)
	MinusInf Rounding = 1 // toward minus infinity (/M)
	Nearest  Rounding = 2 // to nearest, ties to even ("normal", no qualifier)
	PlusInf  Rounding = 3 // toward plus infinity (only through /D and the FPCR)

	Normal = Nearest

	FlushUnderflow Rounding = 4
)

func (r Rounding) String() string {
	s := [4]string{"chopped", "minus", "nearest", "plus"}[r&3]
	if r&FlushUnderflow != 0 {
		s += "+flush"
	}
	return s
}

// qualRounding maps the rounding qualifier field to a direction. Index 3 is
// /D, which the caller resolves from the FPCR; its entry is never used.
var qualRounding = [4]Rounding{Chopped, MinusInf, Nearest, Nearest}

// Qual is an IEEE operate instruction's qualifiers: the function field
// shifted right by 6 (handbook sec. 4.10, table 4-12). Bits 0-1 are the
// rounding mode (QualChopped..QualDynamic), bit 2 /U (or /V for
// conversions to integer), bit 3 /I, bit 4 /S. Decoded.Qual holds the same
// value.
type Qual uint16

const (
	QualChopped   Qual = 0
	QualMinus     Qual = 1
	QualNormal    Qual = 2
	QualDynamic   Qual = 3
	QualRoundMask Qual = 3

	QualU Qual = 1 << 2 // underflow enabled
	QualV Qual = QualU  // integer overflow enabled (CVTTQ, CVTQL)
	QualI Qual = 1 << 3 // inexact enabled
	QualS Qual = 1 << 4 // software completion
)

// DecodeFPFunc splits the 11-bit function field of an opcode 0x14, 0x16 or
// 0x17 instruction into the operation (its low 6 bits) and the qualifiers
// (bits 6-10). One encoding needs the qualifier bits to tell it apart:
// CVTST is 0x2AC or 0x6AC, sharing base 0x2C with CVTTS; its trap field
// has /I's bit without /U's, which no CVTTS qualifier combination has.
// Opcode 0x17's functions (CPYS, CVTQL, ...) are whole 11-bit values with
// only CVTQL taking qualifiers (/V 0x130, /SV 0x530); they split the same
// way.
func DecodeFPFunc(fn uint16) (base uint16, q Qual) {
	return fn & 0x3f, Qual(fn>>6) & 0x1f
}

// Rounding resolves the instruction's rounding: the qualifier's, or for /D
// the FPCR's dynamic mode. Without /U it adds FlushUnderflow.
func (q Qual) Rounding(c FPCR) Rounding {
	r := qualRounding[q&QualRoundMask]
	if q&QualRoundMask == QualDynamic {
		r = c.RoundingMode()
	}
	if q&QualU == 0 {
		r |= FlushUnderflow
	}
	return r
}

// Traps is the subset of exceptions e that this instruction's qualifiers
// enable: invalid operation, division by zero and overflow always; underflow
// and integer overflow only with /U (/V); inexact only with /I (handbook
// sec. 4.7.7). What happens to an enabled exception is the trap handler's
// business: without /S the 21164 raises an imprecise arithmetic trap and
// Linux sends SIGFPE; with /S Linux completes the instruction in software
// and signals only if the thread enabled that trap (ieee_state).
//
// The arithmetic functions report exceptions only through the sticky FPCR,
// so an interpreter learns what one instruction raised by clearing the
// status around the call:
//
//	st := c.FPCR & (FPCRStatus | FPCRSum)
//	c.FPCR &^= FPCRStatus | FPCRSum
//	r := AddT(fa, fb, q.Rounding(c.FPCR), &c.FPCR)
//	exc := c.FPCR.Status()
//	c.FPCR |= st
//	if q&QualS == 0 && q.Traps(exc) != 0 { /* arithmetic trap */ }
func (q Qual) Traps(e Exc) Exc {
	m := ExcInv | ExcDze | ExcOvf
	if q&QualU != 0 {
		m |= ExcUnf | ExcIov
	}
	if q&QualI != 0 {
		m |= ExcIne
	}
	return e & m
}

// Exc is a set of IEEE exceptions raised by one instruction. The bit order
// is the FPCR status field's (bits 52-57) and the EXC_SUM register's (bits
// 1-6), so each is a shift away.
type Exc uint8

const (
	ExcInv Exc = 1 << 0 // invalid operation
	ExcDze Exc = 1 << 1 // division by zero
	ExcOvf Exc = 1 << 2 // overflow
	ExcUnf Exc = 1 << 3 // underflow
	ExcIne Exc = 1 << 4 // inexact
	ExcIov Exc = 1 << 5 // integer overflow
)

func (e Exc) String() string {
	if e == 0 {
		return "none"
	}
	var b strings.Builder
	for i, n := range [6]string{"inv", "dze", "ovf", "unf", "ine", "iov"} {
		if e&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n)
		}
	}
	return b.String()
}

// InputTraps reports whether the 21164 traps on operand x of an IEEE
// instruction without /S: it handles only finite, normal operands (and
// zeros) in hardware; denormals, infinities and NaNs need software
// completion, which only /S requests (handbook sec. 4.7.7.1, table B-2).
// Compares accept infinities. x is in register format, so this serves S
// and T operations alike.
func InputTraps(x uint64, compare bool) bool {
	e := x >> 52 & 0x7ff
	f := x & (1<<52 - 1)
	switch e {
	case 0:
		return f != 0
	case 0x7ff:
		return !compare || f != 0
	}
	return false
}
