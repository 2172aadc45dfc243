package alpha

import "math/bits"

// Integer operations that are more than one Go operator (Alpha Architecture
// Handbook v4, sec. 4.4-4.6 and 4.13). a is Ra's value, b is Rb's value or
// the zero-extended literal. Byte offsets come from b<2:0>; the "high"
// variants with offset 0 follow the handbook's pseudo-code exactly: EXTxH
// shifts by (64-0)<5:0> = 0, INSxH gives 0, MSKxH leaves Ra unchanged.

// byteMasks[m] has byte i set to 0xFF exactly when bit i of m is set.
var byteMasks = func() (t [256]uint64) {
	for m := range t {
		for i := 0; i < 8; i++ {
			if m>>i&1 != 0 {
				t[m] |= 0xff << (8 * i)
			}
		}
	}
	return t
}()

// Zap is ZAP: clear the bytes of a selected by b<7:0>.
func Zap(a, b uint64) uint64 { return a &^ byteMasks[b&0xff] }

// Zapnot is ZAPNOT: keep only the bytes of a selected by b<7:0>.
func Zapnot(a, b uint64) uint64 { return a & byteMasks[b&0xff] }

// Cmpbge is CMPBGE: bit i of the result is set when byte i of a is
// unsigned-greater-or-equal to byte i of b.
func Cmpbge(a, b uint64) uint64 {
	const hi = 0x8080808080808080
	// Compare the low seven bits of each byte without borrows crossing
	// bytes; the top bit of each byte of d is then low7(a) >= low7(b).
	d := (a | hi) - (b &^ hi)
	// Where the top bits differ a's decides; where they agree d's does.
	ge := (a&^b | ^(a^b)&d) & hi
	// Gather the eight top bits into the low byte.
	return (ge >> 7) * 0x0102040810204080 >> 56
}

func byteOff(b uint64) uint { return uint(b&7) * 8 }

// Extract low: Ra shifted right by the byte offset, zero-extended.

func ExtBL(a, b uint64) uint64 { return a >> byteOff(b) & 0xff }
func ExtWL(a, b uint64) uint64 { return a >> byteOff(b) & 0xffff }
func ExtLL(a, b uint64) uint64 { return a >> byteOff(b) & 0xffffffff }
func ExtQL(a, b uint64) uint64 { return a >> byteOff(b) }

// Extract high: Ra shifted left by (64 - offset*8) mod 64.

func ExtWH(a, b uint64) uint64 { return a << (-byteOff(b) & 63) & 0xffff }
func ExtLH(a, b uint64) uint64 { return a << (-byteOff(b) & 63) & 0xffffffff }
func ExtQH(a, b uint64) uint64 { return a << (-byteOff(b) & 63) }

// Insert low: the low bytes of Ra shifted left into position.

func InsBL(a, b uint64) uint64 { return (a & 0xff) << byteOff(b) }
func InsWL(a, b uint64) uint64 { return (a & 0xffff) << byteOff(b) }
func InsLL(a, b uint64) uint64 { return (a & 0xffffffff) << byteOff(b) }
func InsQL(a, b uint64) uint64 { return a << byteOff(b) }

// Insert high: the bytes that insert-low shifted out of the quadword. A Go
// shift by 64 gives 0, which is the offset-0 case.

func InsWH(a, b uint64) uint64 { return (a & 0xffff) >> (64 - byteOff(b)) }
func InsLH(a, b uint64) uint64 { return (a & 0xffffffff) >> (64 - byteOff(b)) }
func InsQH(a, b uint64) uint64 { return a >> (64 - byteOff(b)) }

// Mask low: clear the bytes insert-low would write.

func MskBL(a, b uint64) uint64 { return a &^ (0xff << byteOff(b)) }
func MskWL(a, b uint64) uint64 { return a &^ (0xffff << byteOff(b)) }
func MskLL(a, b uint64) uint64 { return a &^ (0xffffffff << byteOff(b)) }
func MskQL(a, b uint64) uint64 { return a &^ (^uint64(0) << byteOff(b)) }

// Mask high: clear the bytes insert-high would write.

func MskWH(a, b uint64) uint64 { return a &^ (0xffff >> (64 - byteOff(b))) }
func MskLH(a, b uint64) uint64 { return a &^ (0xffffffff >> (64 - byteOff(b))) }
func MskQH(a, b uint64) uint64 { return a &^ (^uint64(0) >> (64 - byteOff(b))) }

// Umulh is UMULH: the high 64 bits of the unsigned 128-bit product.
func Umulh(a, b uint64) uint64 {
	hi, _ := bits.Mul64(a, b)
	return hi
}

// CIX and BWX operations of one operand (Rb or literal).

func Ctpop(b uint64) uint64 { return uint64(bits.OnesCount64(b)) }
func Ctlz(b uint64) uint64  { return uint64(bits.LeadingZeros64(b)) }
func Cttz(b uint64) uint64  { return uint64(bits.TrailingZeros64(b)) }
func Sextb(b uint64) uint64 { return uint64(int64(int8(b))) }
func Sextw(b uint64) uint64 { return uint64(int64(int16(b))) }

// Overflow-checking arithmetic (/V). The result is always the wrapped one
// (the hardware writes Rc before trapping); ovf reports the trap.

// AddLV is ADDL/V: sign-extended longword sum.
func AddLV(a, b uint64) (uint64, bool) {
	s := int64(int32(a)) + int64(int32(b))
	return uint64(int64(int32(s))), s != int64(int32(s))
}

// SubLV is SUBL/V.
func SubLV(a, b uint64) (uint64, bool) {
	s := int64(int32(a)) - int64(int32(b))
	return uint64(int64(int32(s))), s != int64(int32(s))
}

// MulLV is MULL/V.
func MulLV(a, b uint64) (uint64, bool) {
	p := int64(int32(a)) * int64(int32(b))
	return uint64(int64(int32(p))), p != int64(int32(p))
}

// AddQV is ADDQ/V.
func AddQV(a, b uint64) (uint64, bool) {
	s := a + b
	return s, (a^s)&(b^s)>>63 != 0
}

// SubQV is SUBQ/V.
func SubQV(a, b uint64) (uint64, bool) {
	s := a - b
	return s, (a^b)&(a^s)>>63 != 0
}

// MulQV is MULQ/V: overflow when the signed 128-bit product is not the
// sign extension of its low half.
func MulQV(a, b uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	// Correct the unsigned high half to the signed one.
	if int64(a) < 0 {
		hi -= b
	}
	if int64(b) < 0 {
		hi -= a
	}
	return lo, hi != uint64(int64(lo)>>63)
}

// MVI (motion video) operations, bytewise and wordwise.

// Minub8 is MINUB8: bytewise unsigned minimum.
func Minub8(a, b uint64) uint64 { return lanes8(a, b, false, true) }

// Minsb8 is MINSB8: bytewise signed minimum.
func Minsb8(a, b uint64) uint64 { return lanes8(a, b, true, true) }

// Maxub8 is MAXUB8: bytewise unsigned maximum.
func Maxub8(a, b uint64) uint64 { return lanes8(a, b, false, false) }

// Maxsb8 is MAXSB8: bytewise signed maximum.
func Maxsb8(a, b uint64) uint64 { return lanes8(a, b, true, false) }

// Minuw4 is MINUW4: wordwise unsigned minimum.
func Minuw4(a, b uint64) uint64 { return lanes16(a, b, false, true) }

// Minsw4 is MINSW4: wordwise signed minimum.
func Minsw4(a, b uint64) uint64 { return lanes16(a, b, true, true) }

// Maxuw4 is MAXUW4: wordwise unsigned maximum.
func Maxuw4(a, b uint64) uint64 { return lanes16(a, b, false, false) }

// Maxsw4 is MAXSW4: wordwise signed maximum.
func Maxsw4(a, b uint64) uint64 { return lanes16(a, b, true, false) }

func lanes8(a, b uint64, signed, min bool) uint64 {
	var r uint64
	for i := uint(0); i < 64; i += 8 {
		x, y := a>>i&0xff, b>>i&0xff
		if signed {
			x, y = x^0x80, y^0x80 // order signed bytes as unsigned
		}
		if x < y == min {
			r |= a >> i & 0xff << i
		} else {
			r |= b >> i & 0xff << i
		}
	}
	return r
}

func lanes16(a, b uint64, signed, min bool) uint64 {
	var r uint64
	for i := uint(0); i < 64; i += 16 {
		x, y := a>>i&0xffff, b>>i&0xffff
		if signed {
			x, y = x^0x8000, y^0x8000
		}
		if x < y == min {
			r |= a >> i & 0xffff << i
		} else {
			r |= b >> i & 0xffff << i
		}
	}
	return r
}

// Perr is PERR: the sum of the absolute differences of the eight byte
// pairs.
func Perr(a, b uint64) uint64 {
	var s uint64
	for i := uint(0); i < 64; i += 8 {
		x, y := a>>i&0xff, b>>i&0xff
		if x >= y {
			s += x - y
		} else {
			s += y - x
		}
	}
	return s
}

// Pklb is PKLB: bytes 0 and 4 of b packed into bytes 0 and 1.
func Pklb(b uint64) uint64 { return b&0xff | b>>24&0xff00 }

// Pkwb is PKWB: bytes 0, 2, 4 and 6 of b packed into bytes 0-3.
func Pkwb(b uint64) uint64 {
	return b&0xff | b>>8&0xff00 | b>>16&0xff0000 | b>>24&0xff000000
}

// Unpkbl is UNPKBL: bytes 0 and 1 of b spread to bytes 0 and 4.
func Unpkbl(b uint64) uint64 { return b&0xff | b&0xff00<<24 }

// Unpkbw is UNPKBW: bytes 0-3 of b spread to bytes 0, 2, 4 and 6.
func Unpkbw(b uint64) uint64 {
	return b&0xff | b&0xff00<<8 | b&0xff0000<<16 | b&0xff000000<<24
}
