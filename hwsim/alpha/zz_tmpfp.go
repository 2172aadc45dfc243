//go:build tmpfp

package alpha

import "math"

type FPCR uint64
type Rounding uint8

const (
	FPCRDynNormal     FPCR = 2 << 58
	FPCRTrapsDisabled FPCR = 0
)

var qualRounding = [4]Rounding{0, 1, 2, 2}

func (c FPCR) RoundingMode() Rounding { return Rounding(c >> 58 & 3) }

func LdsToReg(m uint32) uint64  { return math.Float64bits(float64(math.Float32frombits(m))) }
func RegToSts(r uint64) uint32  { return math.Float32bits(float32(math.Float64frombits(r))) }
func LdfToReg(m uint32) uint64  { return 0 }
func RegToStf(r uint64) uint32  { return 0 }
func LdgToReg(m uint64) uint64  { return m }
func RegToStg(r uint64) uint64  { return r }
func f(x uint64) float64        { return math.Float64frombits(x) }
func u(x float64) uint64        { return math.Float64bits(x) }
func s(x float64) uint64        { return u(float64(float32(x))) }
func AddT(a, b uint64, rm Rounding, c *FPCR) uint64 { return u(f(a) + f(b)) }
func SubT(a, b uint64, rm Rounding, c *FPCR) uint64 { return u(f(a) - f(b)) }
func MulT(a, b uint64, rm Rounding, c *FPCR) uint64 { return u(f(a) * f(b)) }
func DivT(a, b uint64, rm Rounding, c *FPCR) uint64 { return u(f(a) / f(b)) }
func AddS(a, b uint64, rm Rounding, c *FPCR) uint64 { return s(f(a) + f(b)) }
func SubS(a, b uint64, rm Rounding, c *FPCR) uint64 { return s(f(a) - f(b)) }
func MulS(a, b uint64, rm Rounding, c *FPCR) uint64 { return s(f(a) * f(b)) }
func DivS(a, b uint64, rm Rounding, c *FPCR) uint64 { return s(f(a) / f(b)) }
func SqrtT(b uint64, rm Rounding, c *FPCR) uint64   { return u(math.Sqrt(f(b))) }
func SqrtS(b uint64, rm Rounding, c *FPCR) uint64   { return s(math.Sqrt(f(b))) }
func cmp(b bool) uint64 {
	if b {
		return 0x4000000000000000
	}
	return 0
}
func CmpTEq(a, b uint64, c *FPCR) uint64 { return cmp(f(a) == f(b)) }
func CmpTLt(a, b uint64, c *FPCR) uint64 { return cmp(f(a) < f(b)) }
func CmpTLe(a, b uint64, c *FPCR) uint64 { return cmp(f(a) <= f(b)) }
func CmpTUn(a, b uint64, c *FPCR) uint64 { return cmp(math.IsNaN(f(a)) || math.IsNaN(f(b))) }
func CvtTS(b uint64, rm Rounding, c *FPCR) uint64 { return s(f(b)) }
func CvtST(b uint64, c *FPCR) uint64              { return b }
func CvtTQ(b uint64, rm Rounding, c *FPCR) uint64 {
	x := f(b)
	if rm != 0 {
		x = math.RoundToEven(x)
	}
	return uint64(int64(x))
}
func CvtQS(b uint64, rm Rounding, c *FPCR) uint64 { return s(float64(int64(b))) }
func CvtQT(b uint64, rm Rounding, c *FPCR) uint64 { return u(float64(int64(b))) }
func CvtLQ(b uint64) uint64 {
	return uint64(int64(int32(uint32(b>>32&0xc0000000 | b>>29&0x3fffffff))))
}
func CvtQL(b uint64) uint64 { return (b&0xc0000000)<<32 | (b&0x3fffffff)<<29 }
func Cpys(a, b uint64) uint64  { return a&(1<<63) | b&^(1<<63) }
func Cpysn(a, b uint64) uint64 { return ^a&(1<<63) | b&^(1<<63) }
func Cpyse(a, b uint64) uint64 { return a&(0xfff<<52) | b&^(0xfff<<52) }
func FEq(v uint64) bool        { return v<<1 == 0 }
func FNe(v uint64) bool        { return v<<1 != 0 }
func FLt(v uint64) bool        { return int64(v) < 0 && v<<1 != 0 }
func FLe(v uint64) bool        { return int64(v) < 0 || v<<1 == 0 }
func FGt(v uint64) bool        { return int64(v) >= 0 && v<<1 != 0 }
func FGe(v uint64) bool        { return int64(v) >= 0 || v<<1 == 0 }
func Itofs(a uint64) uint64    { return LdsToReg(uint32(a)) }
func Ftois(a uint64) uint64    { return uint64(int64(int32(RegToSts(a)))) }

func AddLV(a, b uint64) (uint64, bool) { return sext32(a + b), false }
func SubLV(a, b uint64) (uint64, bool) { return sext32(a - b), false }
func AddQV(a, b uint64) (uint64, bool) { return a + b, false }
func SubQV(a, b uint64) (uint64, bool) { return a - b, false }
func MulLV(a, b uint64) (uint64, bool) { return sext32(a * b), false }
func MulQV(a, b uint64) (uint64, bool) { return a * b, false }

func bytemask(m uint64) uint64 {
	var r uint64
	for i := 0; i < 8; i++ {
		if m>>i&1 != 0 {
			r |= 0xff << (8 * i)
		}
	}
	return r
}
func Zap(a, b uint64) uint64    { return a &^ bytemask(b&0xff) }
func Zapnot(a, b uint64) uint64 { return a & bytemask(b&0xff) }
func Cmpbge(a, b uint64) uint64 {
	var r uint64
	for i := 0; i < 8; i++ {
		if byte(a>>(8*i)) >= byte(b>>(8*i)) {
			r |= 1 << i
		}
	}
	return r
}
func ExtBL(a, b uint64) uint64 { return Zapnot(a>>((b&7)*8), 0x01) }
func ExtWL(a, b uint64) uint64 { return Zapnot(a>>((b&7)*8), 0x03) }
func ExtLL(a, b uint64) uint64 { return Zapnot(a>>((b&7)*8), 0x0f) }
func ExtQL(a, b uint64) uint64 { return Zapnot(a>>((b&7)*8), 0xff) }
func exth(a, b, m uint64) uint64 {
	sh := (64 - (b&7)*8) & 63
	return Zapnot(a<<sh, m)
}
func ExtWH(a, b uint64) uint64 { return exth(a, b, 0x03) }
func ExtLH(a, b uint64) uint64 { return exth(a, b, 0x0f) }
func ExtQH(a, b uint64) uint64 { return exth(a, b, 0xff) }
func ins(a, b, m uint64) uint64 {
	return Zapnot(a<<((b&7)*8), (m<<(b&7))&0xff)
}
func InsBL(a, b uint64) uint64 { return ins(a, b, 0x01) }
func InsWL(a, b uint64) uint64 { return ins(a, b, 0x03) }
func InsLL(a, b uint64) uint64 { return ins(a, b, 0x0f) }
func InsQL(a, b uint64) uint64 { return ins(a, b, 0xff) }
func insh(a, b, m uint64) uint64 {
	mask := (m << (b & 7)) >> 8
	if b&7 == 0 {
		return 0
	}
	return Zapnot(a>>(64-(b&7)*8), mask)
}
func InsWH(a, b uint64) uint64 { return insh(a, b, 0x03) }
func InsLH(a, b uint64) uint64 { return insh(a, b, 0x0f) }
func InsQH(a, b uint64) uint64 { return insh(a, b, 0xff) }
func MskBL(a, b uint64) uint64 { return Zap(a, (0x01<<(b&7))&0xff) }
func MskWL(a, b uint64) uint64 { return Zap(a, (0x03<<(b&7))&0xff) }
func MskLL(a, b uint64) uint64 { return Zap(a, (0x0f<<(b&7))&0xff) }
func MskQL(a, b uint64) uint64 { return Zap(a, (0xff<<(b&7))&0xff) }
func MskWH(a, b uint64) uint64 { return Zap(a, (0x03<<(b&7))>>8) }
func MskLH(a, b uint64) uint64 { return Zap(a, (0x0f<<(b&7))>>8) }
func MskQH(a, b uint64) uint64 { return Zap(a, (0xff<<(b&7))>>8) }
func Perr(a, b uint64) uint64   { return 0 }
func Unpkbw(b uint64) uint64    { return 0 }
func Unpkbl(b uint64) uint64    { return 0 }
func Pkwb(b uint64) uint64      { return 0 }
func Pklb(b uint64) uint64      { return 0 }
func Minsb8(a, b uint64) uint64 { return 0 }
func Minsw4(a, b uint64) uint64 { return 0 }
func Minub8(a, b uint64) uint64 { return 0 }
func Minuw4(a, b uint64) uint64 { return 0 }
func Maxub8(a, b uint64) uint64 { return 0 }
func Maxuw4(a, b uint64) uint64 { return 0 }
func Maxsb8(a, b uint64) uint64 { return 0 }
func Maxsw4(a, b uint64) uint64 { return 0 }
