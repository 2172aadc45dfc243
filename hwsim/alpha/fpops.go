package alpha

import (
	"math"
	"math/bits"
)

// IEEE floating point as the 21164 and Linux deliver it (Alpha Architecture
// Handbook v4, sec. 4.7 and appendix B).
//
// FP registers hold the 64-bit register format: T_floating is the IEEE
// double bit pattern; an S_floating value is kept with its exponent widened
// to 11 bits (LdsToReg), which for normal numbers, zeros, infinities and
// NaNs is the float32 value converted to float64. S operations read their
// operands back through the S memory mapping (RegToSts), exactly as the
// hardware ignores register bits <61:59> and <28:0>.
//
// Every operation returns the IEEE default result and records the
// exceptions it raised in the FPCR (status bits and SUM); trap delivery is
// the caller's: see Qual.Traps and InputTraps. The rounding argument is the
// resolved direction, optionally with FlushUnderflow (Qual.Rounding builds
// it). Results are computed exactly in all four directions: a fast path
// uses hardware float64 arithmetic with error-free transformations
// (Fast2Sum, FMA residuals) when the result is a normal number above the
// least one, and everything else —
// overflow, underflow, denormals, directed rounding near those edges — goes
// through an integer round-and-pack that needs no floating point at all.
//
// Choices where sources disagree (each is tested against qemu-alpha, with
// the difference counted, in fpops_test.go):
//   - NaN results follow handbook sec. 4.7.10.4: a NaN in Fb wins over one
//     in Fa, signalling NaNs are quieted by setting the top fraction bit,
//     and an invalid operation on non-NaNs gives the canonical quiet NaN
//     with the sign bit set (0xFFF8000000000000). Linux's software
//     completion does the same (arch/alpha/include/asm/sfp-machine.h);
//     qemu 7.2 uses x87 rules and a positive default NaN.
//   - Tininess is detected after rounding (sec. 4.7.5). An underflowing
//     result of an instruction without /U, or with FPCR UNDZ and UNFD set,
//     is a true zero, +0 even for negative results (sec. 4.7.7.7), and
//     raises UNF and INE. qemu flushes tininess-before-rounding, keeps the
//     sign and raises nothing.
//   - SUM is set with any status bit (sec. 4.7.8); qemu never sets it.
//   - Every exception detected is recorded, whether or not the qualifiers
//     enable its trap. qemu drops INE for /S instructions without /I and for
//     CVTQS/CVTQT without /I, but records it for other non-/S ones.
//   - LDF/STF follow handbook table 2-1; qemu 7.2's are broken (see
//     LdfToReg).

const (
	tSign       = 1 << 63
	tFracMask   = 1<<52 - 1
	tQuiet      = 1 << 51
	tInf        = 0x7ff << 52
	tMinNormal  = 1 << 52
	tDefaultNaN = 0xfff8000000000000

	sSign       = 1 << 31
	sQuiet      = 1 << 22
	sInf        = 0xff << 23
	sDefaultNaN = 0xffc00000

	cmpTrue = 0x4000000000000000 // 2.0, the compares' "true"
)

// fpFormat describes an IEEE format for roundPack.
type fpFormat struct {
	prec      int  // significand bits, counting the hidden bit
	emin      int  // smallest normal exponent
	emax      int  // largest exponent; also the bias
	signShift uint // position of the sign bit
}

var (
	fmtT = fpFormat{prec: 53, emin: -1022, emax: 1023, signShift: 63}
	fmtS = fpFormat{prec: 24, emin: -126, emax: 127, signShift: 31}
)

func f64(x uint64) float64 { return math.Float64frombits(x) }

// Memory-format conversions (handbook sec. 2.2.5-2.2.6).

// LdsToReg maps an S_floating memory datum to register format (LDS):
// exponent 0xFF becomes 0x7FF, zero stays zero, and others are rebiased by
// inserting the complement of the exponent's top bit three times.
func LdsToReg(m uint32) uint64 {
	e := uint64(m >> 23 & 0xff)
	switch {
	case e == 0xff:
		e = 0x7ff
	case e&0x80 != 0:
		e = 0x400 | e&0x7f
	case e != 0:
		e |= 0x380
	}
	return uint64(m>>31)<<63 | e<<52 | uint64(m&0x7fffff)<<29
}

// RegToSts maps a register to an S_floating memory datum (STS): register
// bits <63:62> and <58:29>; the rest are ignored.
func RegToSts(r uint64) uint32 {
	return uint32(r>>32)&0xc0000000 | uint32(r>>29)&0x3fffffff
}

// LdfToReg maps a VAX F_floating memory datum (two swapped 16-bit words) to
// register format (LDF, handbook table 2-1). qemu 7.2 is not a reference
// here: its LDF masks with 0x3fffff, ORing fraction bits into <61:59>, and
// maps exponent 0 to 0x380; its STF converts the address, not the register.
func LdfToReg(m uint32) uint64 {
	e := uint64(m >> 7 & 0xff)
	switch {
	case e&0x80 != 0:
		e = 0x400 | e&0x7f
	case e != 0:
		e |= 0x380
	}
	return uint64(m>>15&1)<<63 | e<<52 | uint64(m&0x7f)<<45 | uint64(m>>16)<<29
}

// RegToStf maps a register to a VAX F_floating memory datum (STF).
func RegToStf(r uint64) uint32 {
	return uint32(r>>48)&0xc000 | uint32(r>>45)&0x3fff | uint32(r>>13)&0xffff0000
}

// LdgToReg maps a VAX G_floating memory datum to register format (LDG): the
// four 16-bit words in reverse order.
func LdgToReg(m uint64) uint64 {
	return m<<48 | m>>48 | (m>>16)&0xffff0000 | (m<<16)&0xffff00000000
}

// RegToStg is the inverse of LdgToReg (the swap is its own inverse).
func RegToStg(r uint64) uint64 { return LdgToReg(r) }

// Itofs is ITOFS: an integer register's low longword, as S memory format.
func Itofs(a uint64) uint64 { return LdsToReg(uint32(a)) }

// Ftois is FTOIS: the S memory format of a register, sign-extended.
func Ftois(a uint64) uint64 { return uint64(int64(int32(RegToSts(a)))) }

// Sign copies and FP branch / FCMOV predicates.

// Cpys is CPYS: Fa's sign with Fb's exponent and fraction.
func Cpys(a, b uint64) uint64 { return a&tSign | b&^tSign }

// Cpysn is CPYSN: the complement of Fa's sign with Fb's exponent and fraction.
func Cpysn(a, b uint64) uint64 { return ^a&tSign | b&^tSign }

// Cpyse is CPYSE: Fa's sign and exponent with Fb's fraction.
func Cpyse(a, b uint64) uint64 { return a&^tFracMask | b&tFracMask }

// The FCMOVxx and FBxx predicates test the raw register bits as a signed
// value in which -0.0 equals +0.0 (handbook sec. 4.9): no exceptions, no
// special meaning for NaNs.

func FEq(v uint64) bool { return v<<1 == 0 }
func FNe(v uint64) bool { return v<<1 != 0 }
func FLt(v uint64) bool { return int64(v) < 0 && v<<1 != 0 }
func FLe(v uint64) bool { return int64(v) < 0 || v<<1 == 0 }
func FGt(v uint64) bool { return int64(v) >= 0 && v<<1 != 0 }
func FGe(v uint64) bool { return int64(v) >= 0 || v<<1 == 0 }

// Longword conversions: a longword in an FP register keeps bits <31:30> in
// <63:62> and bits <29:0> in <58:29>.

// CvtQL is CVTQL: the low longword of Fb in the longword register layout.
func CvtQL(a uint64) uint64 { return (a&0xc0000000)<<32 | (a&0x3fffffff)<<29 }

// CvtQLV is CVTQL with its integer overflow check: when Fb does not fit in
// a signed longword it records IOV and INE (as qemu does; the handbook's
// sec. 4.7.7.9 names IOV). Whether that traps is the /V qualifier's
// business (Qual.Traps).
func CvtQLV(a uint64, fpcr *FPCR) uint64 {
	if int64(a) != int64(int32(a)) {
		fpcr.Record(ExcIov | ExcIne)
	}
	return CvtQL(a)
}

// CvtLQ is CVTLQ: the longword in Fb's longword layout, sign-extended.
func CvtLQ(a uint64) uint64 {
	return uint64(int64(int32(uint32(a>>32)&0xc0000000 | uint32(a>>29)&0x3fffffff)))
}

// Exceptions and NaNs.

func isNaNT(x uint64) bool  { return x&^tSign > tInf }
func isSNaNT(x uint64) bool { return isNaNT(x) && x&tQuiet == 0 }
func isNaNS(x uint32) bool  { return x&^sSign > sInf }
func isSNaNS(x uint32) bool { return isNaNS(x) && x&sQuiet == 0 }

// nanT is the result of a T operation with a NaN operand (handbook sec.
// 4.7.10.4): Fb's NaN, else Fa's, quieted; INV if either signals.
func nanT(a, b uint64) (uint64, Exc) {
	var e Exc
	if isSNaNT(a) || isSNaNT(b) {
		e = ExcInv
	}
	if isNaNT(b) {
		return b | tQuiet, e
	}
	return a | tQuiet, e
}

// nanS is nanT for S memory-format operands.
func nanS(a, b uint32) (uint32, Exc) {
	var e Exc
	if isSNaNS(a) || isSNaNS(b) {
		e = ExcInv
	}
	if isNaNS(b) {
		return b | sQuiet, e
	}
	return a | sQuiet, e
}

// dnzT and dnzS read a denormal as a zero of the same sign when FPCR.DNZ is
// set.
func dnzT(x uint64, c FPCR) uint64 {
	if c&FPCRDnz != 0 && x>>52&0x7ff == 0 {
		return x & tSign
	}
	return x
}

func dnzS(x uint32, c FPCR) uint32 {
	if c&FPCRDnz != 0 && x>>23&0xff == 0 {
		return x & sSign
	}
	return x
}

// flushMode adds FlushUnderflow to rm when the FPCR asks for it.
func flushMode(rm Rounding, c FPCR) Rounding {
	if c.flushUnderflow() {
		rm |= FlushUnderflow
	}
	return rm
}

// zeroSum is the sign of an exact zero sum (IEEE 754 sec. 6.3): the
// operands' common sign, else +0, or -0 when rounding toward minus
// infinity.
func zeroSum(signA, signB uint64, rm Rounding) uint64 {
	if signA == signB {
		return signA
	}
	if rm&3 == MinusInf {
		return 1
	}
	return 0
}

// Round and pack.

// unpackT splits a finite, nonzero T datum into sign, exponent and a
// significand normalized to bit 63: value = sig * 2^(exp-63).
func unpackT(x uint64) (sign uint64, exp int, sig uint64) {
	e := int(x >> 52 & 0x7ff)
	f := x & tFracMask
	if e == 0 {
		lz := bits.LeadingZeros64(f)
		return x >> 63, -1011 - lz, f << lz
	}
	return x >> 63, e - 1023, (f | 1<<52) << 11
}

// norm normalizes sig (nonzero) to bit 63, keeping value = sig*2^(exp-63).
func norm(exp int, sig uint64) (int, uint64) {
	lz := bits.LeadingZeros64(sig)
	return exp - lz, sig << lz
}

// roundSig drops the low drop bits of sig, rounding in direction rm for a
// number of the given sign. sig is nonzero; drop is at least 1.
func roundSig(sig uint64, drop uint, sign uint64, rm Rounding) (q uint64, inexact bool) {
	away := rm&3 == PlusInf && sign == 0 || rm&3 == MinusInf && sign != 0
	if drop >= 64 {
		if away || rm&3 == Nearest && drop == 64 && sig > 1<<63 {
			return 1, true
		}
		return 0, true
	}
	q = sig >> drop
	rem := sig & (1<<drop - 1)
	if rem == 0 {
		return q, false
	}
	if away {
		q++
	} else if rm&3 == Nearest {
		half := uint64(1) << (drop - 1)
		if rem > half || rem == half && q&1 != 0 {
			q++
		}
	}
	return q, true
}

// roundPack rounds sign * sig * 2^(exp-63) (sig normalized to bit 63, its
// low bit sticky) to format f and returns the datum in f's memory layout.
func roundPack(sign uint64, exp int, sig uint64, rm Rounding, f *fpFormat) (uint64, Exc) {
	drop := uint(64 - f.prec)
	q, inexact := roundSig(sig, drop, sign, rm)
	e := exp
	if q>>uint(f.prec) != 0 {
		q >>= 1
		e++
	}
	sgn := sign << f.signShift
	if e > f.emax {
		inf := (uint64(1)<<(f.signShift-uint(f.prec)+1) - 1) << (f.prec - 1)
		if rm&3 == Chopped || rm&3 == PlusInf && sign != 0 || rm&3 == MinusInf && sign == 0 {
			return sgn | (inf - 1), ExcOvf | ExcIne
		}
		return sgn | inf, ExcOvf | ExcIne
	}
	var exc Exc
	if inexact {
		exc = ExcIne
	}
	if e >= f.emin {
		// q carries the hidden bit, which adds one to the exponent field.
		return sgn | uint64(e+f.emax-1)<<(f.prec-1) + q, exc
	}
	// Tiny after rounding (handbook sec. 4.7.5).
	if rm&FlushUnderflow != 0 {
		return 0, ExcUnf | ExcIne
	}
	q, inexact = roundSig(sig, drop+uint(f.emin-exp), sign, rm)
	if inexact {
		return sgn | q, ExcUnf | ExcIne
	}
	return sgn | q, 0
}

// roundFloat64 rounds s+err to format f, where s = RN(s+err) is a nonzero
// float64 and errSign is the sign of err (the exact error of an error-free
// transformation): err lies below s's last bit, so it acts as a sticky bit.
func roundFloat64(s float64, errSign int, rm Rounding, f *fpFormat) (uint64, Exc) {
	sign, exp, sig := unpackT(math.Float64bits(s))
	if sign != 0 {
		errSign = -errSign
	}
	switch {
	case errSign > 0:
		sig |= 1
	case errSign < 0 && sig == 1<<63:
		sig, exp = ^uint64(0), exp-1
	case errSign < 0:
		sig--
	}
	return roundPack(sign, exp, sig, rm, f)
}

func signOf(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// twoSumErr is the exact error of s = RN(x+y) for finite s: Dekker's
// Fast2Sum with the operand of larger magnitude first. (Knuth's branch-free
// TwoSum is no good here: its s-x overflows when x is near -MAX and s near
// +MAX.)
func twoSumErr(x, y, s float64) float64 {
	if math.Abs(x) < math.Abs(y) {
		x, y = y, x
	}
	return y - (s - x)
}

// fastRound finishes a T operation from s = RN(exact) and err = exact - s
// (or any value of err's sign) when the result is a normal number, which
// makes directed rounding a step of one ulp. ok is false when the caller
// must take the exact path.
func fastRound(s, err float64, rm Rounding) (r uint64, e Exc, ok bool) {
	// The least normal is excluded: a result that rounds up to it may
	// still be tiny after rounding to 53 bits with unbounded exponent.
	r = math.Float64bits(s)
	if m := r &^ tSign; m <= tMinNormal || m >= tInf {
		return 0, 0, false
	}
	if err == 0 {
		return r, 0, true
	}
	neg := s < 0
	switch rm & 3 {
	case Chopped:
		if (err < 0) != neg {
			r--
		}
	case PlusInf:
		if err > 0 {
			if neg {
				r--
			} else {
				r++
			}
		}
	case MinusInf:
		if err < 0 {
			if neg {
				r++
			} else {
				r--
			}
		}
	}
	if m := r &^ tSign; m <= tMinNormal || m >= tInf {
		return 0, 0, false
	}
	return r, ExcIne, true
}

// finishS rounds s+err (errSign its sign) to S and returns register format.
func finishS(s float64, errSign int, rm Rounding, fpcr *FPCR) uint64 {
	if rm&3 == Nearest {
		// Rounding to double and then to single is exact for +, -, *, /
		// and sqrt of singles (Figueroa 1995: 53 >= 2*24+2).
		t := float32(s)
		if m := math.Float32bits(t) &^ sSign; m > 1<<23 && m < sInf {
			if errSign != 0 || float64(t) != s {
				fpcr.Record(ExcIne)
			}
			return math.Float64bits(float64(t))
		}
	}
	r, e := roundFloat64(s, errSign, flushMode(rm, *fpcr), &fmtS)
	fpcr.Record(e)
	return LdsToReg(uint32(r))
}

// T_floating arithmetic.

// AddT is ADDT: Fa + Fb.
func AddT(a, b uint64, rm Rounding, fpcr *FPCR) uint64 {
	if *fpcr&FPCRDnz == 0 {
		x, y := f64(a), f64(b)
		s := x + y
		if r, e, ok := fastRound(s, twoSumErr(x, y, s), rm); ok {
			fpcr.Record(e)
			return r
		}
	}
	r, e := addT(a, b, rm, *fpcr)
	fpcr.Record(e)
	return r
}

// SubT is SUBT: Fa - Fb.
func SubT(a, b uint64, rm Rounding, fpcr *FPCR) uint64 {
	if !isNaNT(b) {
		b ^= tSign
	}
	return AddT(a, b, rm, fpcr)
}

func addT(a, b uint64, rm Rounding, c FPCR) (uint64, Exc) {
	a, b = dnzT(a, c), dnzT(b, c)
	rm = flushMode(rm, c)
	if isNaNT(a) || isNaNT(b) {
		return nanT(a, b)
	}
	aInf, bInf := a&^tSign == tInf, b&^tSign == tInf
	switch {
	case aInf && bInf && a != b:
		return tDefaultNaN, ExcInv
	case aInf:
		return a, 0
	case bInf:
		return b, 0
	}
	aZero, bZero := a<<1 == 0, b<<1 == 0
	if aZero && bZero {
		return zeroSum(a>>63, b>>63, rm) << 63, 0
	}
	if bZero {
		sign, exp, sig := unpackT(a)
		return roundPack(sign, exp, sig, rm, &fmtT)
	}
	if aZero {
		sign, exp, sig := unpackT(b)
		return roundPack(sign, exp, sig, rm, &fmtT)
	}
	sa, ea, ma := unpackT(a)
	sb, eb, mb := unpackT(b)
	if eb > ea || eb == ea && mb > ma {
		sa, ea, ma, sb, eb, mb = sb, eb, mb, sa, ea, ma
	}
	// Both significands move down one bit to leave room for a carry; b's
	// is aligned with a's, its shifted-out bits jammed into the low bit.
	x, y := ma>>1, jamShift(mb>>1, uint(ea-eb))
	var s uint64
	if sa == sb {
		s = x + y
	} else {
		s = x - y
		if s == 0 {
			return zeroSum(sa, sb, rm) << 63, 0
		}
	}
	exp, sig := norm(ea+1, s)
	return roundPack(sa, exp, sig, rm, &fmtT)
}

// jamShift shifts v right by d, ORing any bits shifted out into bit 0.
func jamShift(v uint64, d uint) uint64 {
	switch {
	case d == 0:
		return v
	case d < 64:
		if v<<(64-d) != 0 {
			return v>>d | 1
		}
		return v >> d
	case v != 0:
		return 1
	}
	return 0
}

// MulT is MULT: Fa * Fb.
func MulT(a, b uint64, rm Rounding, fpcr *FPCR) uint64 {
	if *fpcr&FPCRDnz == 0 {
		x, y := f64(a), f64(b)
		p := x * y
		// Above 2^-968 the product's error is a representable double.
		if math.Float64bits(p)&^tSign >= 55<<52 {
			if r, e, ok := fastRound(p, math.FMA(x, y, -p), rm); ok {
				fpcr.Record(e)
				return r
			}
		}
	}
	r, e := mulT(a, b, rm, *fpcr)
	fpcr.Record(e)
	return r
}

func mulT(a, b uint64, rm Rounding, c FPCR) (uint64, Exc) {
	a, b = dnzT(a, c), dnzT(b, c)
	rm = flushMode(rm, c)
	if isNaNT(a) || isNaNT(b) {
		return nanT(a, b)
	}
	sign := (a ^ b) >> 63
	aInf, bInf := a&^tSign == tInf, b&^tSign == tInf
	aZero, bZero := a<<1 == 0, b<<1 == 0
	switch {
	case (aInf || bInf) && (aZero || bZero):
		return tDefaultNaN, ExcInv
	case aInf || bInf:
		return sign<<63 | tInf, 0
	case aZero || bZero:
		return sign << 63, 0
	}
	_, ea, ma := unpackT(a)
	_, eb, mb := unpackT(b)
	hi, lo := bits.Mul64(ma, mb)
	if lo != 0 {
		hi |= 1
	}
	exp, sig := norm(ea+eb+1, hi)
	return roundPack(sign, exp, sig, rm, &fmtT)
}

// DivT is DIVT: Fa / Fb.
func DivT(a, b uint64, rm Rounding, fpcr *FPCR) uint64 {
	if *fpcr&FPCRDnz == 0 {
		x, y := f64(a), f64(b)
		q := x / y
		// With |Fa| >= 2^-900 the remainder Fa - q*Fb is a representable
		// double, and x/y = q + rem/y.
		if math.Float64bits(x)&^tSign >= 123<<52 {
			rem := math.FMA(-q, y, x)
			if y < 0 {
				rem = -rem
			}
			if r, e, ok := fastRound(q, rem, rm); ok {
				fpcr.Record(e)
				return r
			}
		}
	}
	r, e := divT(a, b, rm, *fpcr)
	fpcr.Record(e)
	return r
}

func divT(a, b uint64, rm Rounding, c FPCR) (uint64, Exc) {
	a, b = dnzT(a, c), dnzT(b, c)
	rm = flushMode(rm, c)
	if isNaNT(a) || isNaNT(b) {
		return nanT(a, b)
	}
	sign := (a ^ b) >> 63
	aInf, bInf := a&^tSign == tInf, b&^tSign == tInf
	aZero, bZero := a<<1 == 0, b<<1 == 0
	switch {
	case aInf && bInf, aZero && bZero:
		return tDefaultNaN, ExcInv
	case aInf:
		return sign<<63 | tInf, 0
	case bZero:
		return sign<<63 | tInf, ExcDze
	case bInf, aZero:
		return sign << 63, 0
	}
	_, ea, ma := unpackT(a)
	_, eb, mb := unpackT(b)
	q, rem := bits.Div64(ma>>1, 0, mb)
	if rem != 0 {
		q |= 1
	}
	exp, sig := norm(ea-eb, q)
	return roundPack(sign, exp, sig, rm, &fmtT)
}

// SqrtT is SQRTT: the square root of Fb.
func SqrtT(b uint64, rm Rounding, fpcr *FPCR) uint64 {
	r, e := sqrtT(b, rm, *fpcr)
	fpcr.Record(e)
	return r
}

func sqrtT(b uint64, rm Rounding, c FPCR) (uint64, Exc) {
	b = dnzT(b, c)
	switch {
	case isNaNT(b):
		return nanT(b, b)
	case b<<1 == 0, b == tInf:
		return b, 0
	case b>>63 != 0:
		return tDefaultNaN, ExcInv
	}
	// Scale Fb by an even power of two into [1, 4), where the square
	// root's FMA residual is exact; the root of a double is never tiny and
	// never overflows, so scaling back is exact too.
	_, exp, sig := unpackT(b)
	odd := uint64(exp & 1)
	x := f64((1023+odd)<<52 | sig<<1>>12)
	s := math.Sqrt(x)
	rem := math.FMA(-s, s, x)
	r := math.Float64bits(s)
	switch {
	case rem == 0:
		return r + uint64(exp>>1)<<52, 0
	case rem < 0 && (rm&3 == Chopped || rm&3 == MinusInf):
		r--
	case rem > 0 && rm&3 == PlusInf:
		r++
	}
	return r + uint64(exp>>1)<<52, ExcIne
}

// S_floating arithmetic: operands go through the S memory format, the
// exact result is formed in float64 (where no single-precision operation
// can overflow, underflow or lose its error term) and rounded once to S.

// AddS is ADDS: Fa + Fb.
func AddS(a, b uint64, rm Rounding, fpcr *FPCR) uint64 {
	return addS(RegToSts(a), RegToSts(b), rm, fpcr)
}

// SubS is SUBS: Fa - Fb.
func SubS(a, b uint64, rm Rounding, fpcr *FPCR) uint64 {
	y := RegToSts(b)
	if !isNaNS(y) {
		y ^= sSign
	}
	return addS(RegToSts(a), y, rm, fpcr)
}

func addS(x32, y32 uint32, rm Rounding, fpcr *FPCR) uint64 {
	x32, y32 = dnzS(x32, *fpcr), dnzS(y32, *fpcr)
	if x32&sInf == sInf || y32&sInf == sInf {
		if isNaNS(x32) || isNaNS(y32) {
			r, e := nanS(x32, y32)
			fpcr.Record(e)
			return LdsToReg(r)
		}
		if x32&^sSign == sInf && y32&^sSign == sInf && x32 != y32 {
			fpcr.Record(ExcInv)
			return tDefaultNaN
		}
		if x32&^sSign == sInf {
			return LdsToReg(x32)
		}
		return LdsToReg(y32)
	}
	x, y := float64(math.Float32frombits(x32)), float64(math.Float32frombits(y32))
	s := x + y
	if s == 0 {
		return zeroSum(uint64(x32>>31), uint64(y32>>31), rm) << 63
	}
	return finishS(s, signOf(twoSumErr(x, y, s)), rm, fpcr)
}

// MulS is MULS: Fa * Fb.
func MulS(a, b uint64, rm Rounding, fpcr *FPCR) uint64 {
	x32, y32 := dnzS(RegToSts(a), *fpcr), dnzS(RegToSts(b), *fpcr)
	sign := uint64((x32^y32)>>31) << 63
	xInf, yInf := x32&^sSign == sInf, y32&^sSign == sInf
	xZero, yZero := x32<<1 == 0, y32<<1 == 0
	switch {
	case isNaNS(x32) || isNaNS(y32):
		r, e := nanS(x32, y32)
		fpcr.Record(e)
		return LdsToReg(r)
	case (xInf || yInf) && (xZero || yZero):
		fpcr.Record(ExcInv)
		return tDefaultNaN
	case xInf || yInf:
		return sign | tInf
	case xZero || yZero:
		return sign
	}
	// The product of two singles is exact in a double.
	p := float64(math.Float32frombits(x32)) * float64(math.Float32frombits(y32))
	return finishS(p, 0, rm, fpcr)
}

// DivS is DIVS: Fa / Fb.
func DivS(a, b uint64, rm Rounding, fpcr *FPCR) uint64 {
	x32, y32 := dnzS(RegToSts(a), *fpcr), dnzS(RegToSts(b), *fpcr)
	sign := uint64((x32^y32)>>31) << 63
	xInf, yInf := x32&^sSign == sInf, y32&^sSign == sInf
	xZero, yZero := x32<<1 == 0, y32<<1 == 0
	switch {
	case isNaNS(x32) || isNaNS(y32):
		r, e := nanS(x32, y32)
		fpcr.Record(e)
		return LdsToReg(r)
	case xInf && yInf, xZero && yZero:
		fpcr.Record(ExcInv)
		return tDefaultNaN
	case xInf:
		return sign | tInf
	case yZero:
		fpcr.Record(ExcDze)
		return sign | tInf
	case yInf, xZero:
		return sign
	}
	x, y := float64(math.Float32frombits(x32)), float64(math.Float32frombits(y32))
	q := x / y
	rem := math.FMA(-q, y, x)
	return finishS(q, signOf(rem)*signOf(y), rm, fpcr)
}

// SqrtS is SQRTS: the square root of Fb.
func SqrtS(b uint64, rm Rounding, fpcr *FPCR) uint64 {
	x32 := dnzS(RegToSts(b), *fpcr)
	switch {
	case isNaNS(x32):
		r, e := nanS(x32, x32)
		fpcr.Record(e)
		return LdsToReg(r)
	case x32<<1 == 0, x32 == sInf:
		return LdsToReg(x32)
	case x32>>31 != 0:
		fpcr.Record(ExcInv)
		return tDefaultNaN
	}
	x := float64(math.Float32frombits(x32))
	s := math.Sqrt(x)
	return finishS(s, signOf(math.FMA(-s, s, x)), rm, fpcr)
}

// Compares. The result is 2.0 for true, +0 for false. CMPTEQ and CMPTUN
// are quiet (INV only for a signalling NaN); CMPTLT and CMPTLE signal INV
// for any NaN (handbook table B-2; Linux's software completion agrees).

func cmpResult(t bool) uint64 {
	if t {
		return cmpTrue
	}
	return 0
}

// CmpTUn is CMPTUN: unordered.
func CmpTUn(a, b uint64, fpcr *FPCR) uint64 {
	if isNaNT(a) || isNaNT(b) {
		if isSNaNT(a) || isSNaNT(b) {
			fpcr.Record(ExcInv)
		}
		return cmpTrue
	}
	return 0
}

// CmpTEq is CMPTEQ: equal.
func CmpTEq(a, b uint64, fpcr *FPCR) uint64 {
	if isNaNT(a) || isNaNT(b) {
		if isSNaNT(a) || isSNaNT(b) {
			fpcr.Record(ExcInv)
		}
		return 0
	}
	return cmpResult(f64(dnzT(a, *fpcr)) == f64(dnzT(b, *fpcr)))
}

// CmpTLt is CMPTLT: less than.
func CmpTLt(a, b uint64, fpcr *FPCR) uint64 {
	if isNaNT(a) || isNaNT(b) {
		fpcr.Record(ExcInv)
		return 0
	}
	return cmpResult(f64(dnzT(a, *fpcr)) < f64(dnzT(b, *fpcr)))
}

// CmpTLe is CMPTLE: less than or equal.
func CmpTLe(a, b uint64, fpcr *FPCR) uint64 {
	if isNaNT(a) || isNaNT(b) {
		fpcr.Record(ExcInv)
		return 0
	}
	return cmpResult(f64(dnzT(a, *fpcr)) <= f64(dnzT(b, *fpcr)))
}

// Conversions.

// CvtTS is CVTTS: T to S, rounded.
func CvtTS(b uint64, rm Rounding, fpcr *FPCR) uint64 {
	b = dnzT(b, *fpcr)
	switch {
	case isNaNT(b):
		var e Exc
		if isSNaNT(b) {
			e = ExcInv
		}
		fpcr.Record(e)
		return b&tSign | tInf | b&(tFracMask&^(1<<29-1)) | tQuiet
	case b&^tSign == tInf, b<<1 == 0:
		return b
	}
	if rm&3 == Nearest {
		x := f64(b)
		t := float32(x)
		if m := math.Float32bits(t) &^ sSign; m > 1<<23 && m < sInf {
			if float64(t) != x {
				fpcr.Record(ExcIne)
			}
			return math.Float64bits(float64(t))
		}
	}
	sign, exp, sig := unpackT(b)
	r, e := roundPack(sign, exp, sig, flushMode(rm, *fpcr), &fmtS)
	fpcr.Record(e)
	return LdsToReg(uint32(r))
}

// CvtST is CVTST: S to T, always exact; a signalling NaN is quieted and
// raises INV.
func CvtST(b uint64, fpcr *FPCR) uint64 {
	x := dnzS(RegToSts(b), *fpcr)
	if isNaNS(x) {
		if isSNaNS(x) {
			fpcr.Record(ExcInv)
		}
		return LdsToReg(x | sQuiet)
	}
	return math.Float64bits(float64(math.Float32frombits(x)))
}

// CvtQT is CVTQT: a quadword integer to T, rounded (INE only).
func CvtQT(b uint64, rm Rounding, fpcr *FPCR) uint64 {
	r, e := cvtQ(b, rm, &fmtT)
	fpcr.Record(e)
	return r
}

// CvtQS is CVTQS: a quadword integer to S, rounded (INE only).
func CvtQS(b uint64, rm Rounding, fpcr *FPCR) uint64 {
	r, e := cvtQ(b, rm, &fmtS)
	fpcr.Record(e)
	return LdsToReg(uint32(r))
}

func cvtQ(b uint64, rm Rounding, f *fpFormat) (uint64, Exc) {
	if b == 0 {
		return 0, 0
	}
	sign, mag := b>>63, b
	if sign != 0 {
		mag = -b
	}
	exp, sig := norm(63, mag)
	return roundPack(sign, exp, sig, rm&3, f)
}

// CvtTQ is CVTTQ: T to a quadword integer, rounded. An infinity or NaN
// gives 0 and INV. Out of range, the result is the low 64 bits of the
// rounded integer, with IOV and INE (handbook sec. 4.7.7.9; INE as qemu).
func CvtTQ(b uint64, rm Rounding, fpcr *FPCR) uint64 {
	r, e := cvtTQ(b, rm, *fpcr)
	fpcr.Record(e)
	return r
}

func cvtTQ(b uint64, rm Rounding, c FPCR) (uint64, Exc) {
	b = dnzT(b, c)
	sign := b >> 63
	e := int(b >> 52 & 0x7ff)
	m := b & tFracMask
	var r uint64
	var exc Exc
	switch {
	case e == 0x7ff:
		return 0, ExcInv
	case e == 0 && m == 0:
		return 0, 0
	case e == 0:
		// A denormal: 0 < |Fb| < 1.
		r, _ = roundSig(1, 64+1, sign, rm)
		exc = ExcIne
	case e >= 1075:
		if sh := uint(e - 1075); sh < 64 {
			r = (m | 1<<52) << sh
		}
		if e >= 1086 && b != 0xc3e0000000000000 {
			exc = ExcIov | ExcIne
		}
	default:
		var inexact bool
		r, inexact = roundSig((m|1<<52)<<11, uint(1075-e)+11, sign, rm)
		if inexact {
			exc = ExcIne
		}
	}
	if sign != 0 {
		r = -r
	}
	return r, exc
}
