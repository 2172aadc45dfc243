package alpha

import (
	"dcpi/internal/testrand"
	"math/bits"
	"math/rand/v2"
	"testing"
)

const q0 = 0x0123456789abcdef

func TestIntByteManipulation(t *testing.T) {
	cases := []struct {
		name string
		f    func(a, b uint64) uint64
		a, b uint64
		want uint64
	}{
		{"extbl 0", ExtBL, q0, 0, 0xef},
		{"extbl 7", ExtBL, q0, 7, 0x01},
		{"extbl uses b<2:0> only", ExtBL, q0, 0xfffffffffffffff9, 0xcd},
		{"extwl 7 runs off the end", ExtWL, q0, 7, 0x01},
		{"extll 6", ExtLL, q0, 6, 0x0123},
		{"extql 3", ExtQL, q0, 3, 0x0123456789},
		{"extwh 0 keeps the low word", ExtWH, q0, 0, 0xcdef},
		{"extwh 7", ExtWH, q0, 7, 0xef00},
		{"extlh 5", ExtLH, q0, 5, 0xef000000},
		{"extqh 0 is the identity", ExtQH, q0, 0, q0},
		{"extqh 3", ExtQH, q0, 3, 0xabcdef0000000000},
		{"extql|extqh 3: unaligned quad", func(a, b uint64) uint64 { return ExtQL(a, b) | ExtQH(0x1122334455667788, b) }, q0, 3, 0x6677880123456789},
		{"insbl 3", InsBL, q0, 3, 0xef000000},
		{"inswl 7 drops the high byte", InsWL, q0, 7, 0xef00000000000000},
		{"insll 2", InsLL, q0, 2, 0x000089abcdef0000},
		{"insql 1", InsQL, q0, 1, 0x23456789abcdef00},
		{"inswh 0 is zero", InsWH, q0, 0, 0},
		{"inswh 6 is zero", InsWH, q0, 6, 0},
		{"inswh 7", InsWH, q0, 7, 0xcd},
		{"inslh 5 spills one byte", InsLH, q0, 5, 0x89},
		{"insqh 0 is zero", InsQH, q0, 0, 0},
		{"insqh 1", InsQH, q0, 1, 0x01},
		{"mskbl 0", MskBL, q0, 0, 0x0123456789abcd00},
		{"mskwl 7", MskWL, q0, 7, 0x00234567_89abcdef},
		{"mskll 4", MskLL, q0, 4, 0x0000000089abcdef},
		{"mskql 0 clears all", MskQL, q0, 0, 0},
		{"mskql 5", MskQL, q0, 5, 0x0000006789abcdef},
		{"mskwh 0 is the identity", MskWH, q0, 0, q0},
		{"mskwh 7", MskWH, q0, 7, 0x0123456789abcd00},
		{"msklh 6", MskLH, q0, 6, 0x0123456789ab0000},
		{"mskqh 1", MskQH, q0, 1, 0x0123456789abcd00},
		{"mskqh 0 is the identity", MskQH, q0, 0, q0},
		{"zap 0x0f", Zap, q0, 0x0f, 0x0123456700000000},
		{"zap uses b<7:0> only", Zap, q0, 0x1f0, 0x0000000089abcdef},
		{"zapnot 0x0f", Zapnot, q0, 0x0f, 0x0000000089abcdef},
		{"zapnot 0x81", Zapnot, q0, 0x81, 0x01000000000000ef},
		{"cmpbge equal", Cmpbge, q0, q0, 0xff},
		{"cmpbge zero", Cmpbge, 0, 1, 0xfe},
		{"cmpbge unsigned", Cmpbge, 0x80, 0x7f, 0xff},
		{"cmpbge high byte", Cmpbge, 0x7f00000000000000, 0x8000000000000000, 0x7f},
		{"umulh", Umulh, ^uint64(0), ^uint64(0), 0xfffffffffffffffe},
		{"umulh 2^32*2^32", Umulh, 1 << 32, 1 << 32, 1},
		{"minub8", Minub8, 0x00ff7f80, 0x017e8081, 0x007e7f80},
		{"minsb8", Minsb8, 0x00ff7f80, 0x017e8081, 0x00ff8080},
		{"maxub8", Maxub8, 0x00ff7f80, 0x017e8081, 0x01ff8081},
		{"maxsb8", Maxsb8, 0x00ff7f80, 0x017e8081, 0x017e7f81},
		{"minuw4", Minuw4, 0x8000_7fff_0001_ffff, 0x7fff_8000_0002_0000, 0x7fff_7fff_0001_0000},
		{"minsw4", Minsw4, 0x8000_7fff_0001_ffff, 0x7fff_8000_0002_0000, 0x8000_8000_0001_ffff},
		{"maxuw4", Maxuw4, 0x8000_7fff_0001_ffff, 0x7fff_8000_0002_0000, 0x8000_8000_0002_ffff},
		{"maxsw4", Maxsw4, 0x8000_7fff_0001_ffff, 0x7fff_8000_0002_0000, 0x7fff_7fff_0002_0000},
		{"perr", Perr, 0x00ff, 0xff00, 0x1fe},
		{"perr max", Perr, 0, ^uint64(0), 8 * 255},
	}
	for _, c := range cases {
		if got := c.f(c.a, c.b); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}

func TestIntUnary(t *testing.T) {
	cases := []struct {
		name string
		f    func(b uint64) uint64
		b    uint64
		want uint64
	}{
		{"ctpop 0", Ctpop, 0, 0}, {"ctpop", Ctpop, q0, 32},
		{"ctlz 0", Ctlz, 0, 64}, {"ctlz", Ctlz, q0, 7},
		{"cttz 0", Cttz, 0, 64}, {"cttz", Cttz, 0x100, 8},
		{"sextb", Sextb, 0x1280, 0xffffffffffffff80}, {"sextb positive", Sextb, 0x7f, 0x7f},
		{"sextw", Sextw, 0x18000, 0xffffffffffff8000}, {"sextw positive", Sextw, 0x7fff, 0x7fff},
		{"pklb", Pklb, 0xffffffbbffffffaa, 0xbbaa},
		{"pkwb", Pkwb, 0xffddffccffbbffaa, 0xddccbbaa},
		{"unpkbl", Unpkbl, 0xffffbbaa, 0x000000bb000000aa},
		{"unpkbw", Unpkbw, 0xffffffffddccbbaa, 0x00dd00cc00bb00aa},
	}
	for _, c := range cases {
		if got := c.f(c.b); got != c.want {
			t.Errorf("%s(%#x): %#x, want %#x", c.name, c.b, got, c.want)
		}
	}
}

func TestIntOverflow(t *testing.T) {
	cases := []struct {
		name string
		f    func(a, b uint64) (uint64, bool)
		a, b uint64
		want uint64
		ovf  bool
	}{
		{"addl/v max+1", AddLV, 0x7fffffff, 1, 0xffffffff80000000, true},
		{"addl/v ignores high halves", AddLV, 0x1_00000001, 0xffffffff_00000001, 2, false},
		{"addl/v -1+-1", AddLV, ^uint64(0), ^uint64(0), ^uint64(1), false},
		{"subl/v min-1", SubLV, 0x80000000, 1, 0x7fffffff, true},
		{"subl/v 0-min", SubLV, 0, 0xffffffff80000000, 0xffffffff80000000, true},
		{"mull/v 2^16*2^16", MulLV, 0x10000, 0x10000, 0, true},
		{"mull/v -2^15*2^16", MulLV, 0xffffffffffff8000, 0x10000, 0xffffffff80000000, false},
		{"addq/v max+1", AddQV, 1<<63 - 1, 1, 1 << 63, true},
		{"addq/v -1+1", AddQV, ^uint64(0), 1, 0, false},
		{"subq/v min-1", SubQV, 1 << 63, 1, 1<<63 - 1, true},
		{"subq/v 0-min", SubQV, 0, 1 << 63, 1 << 63, true},
		{"subq/v -1-min", SubQV, ^uint64(0), 1 << 63, 1<<63 - 1, false},
		{"mulq/v 2^32*2^31", MulQV, 1 << 32, 1 << 31, 1 << 63, true},
		{"mulq/v -2^32*2^31", MulQV, 0xffffffff00000000, 1 << 31, 1 << 63, false},
		{"mulq/v -1*min", MulQV, ^uint64(0), 1 << 63, 1 << 63, true},
		{"mulq/v -1*-1", MulQV, ^uint64(0), ^uint64(0), 1, false},
	}
	for _, c := range cases {
		got, ovf := c.f(c.a, c.b)
		if got != c.want || ovf != c.ovf {
			t.Errorf("%s: %#x %v, want %#x %v", c.name, got, ovf, c.want, c.ovf)
		}
	}
}

// TestIntAgainstModels checks the bit tricks against byte-at-a-time models
// written from the handbook's pseudo-code.
func TestIntAgainstModels(t *testing.T) {
	rng := rand.New(rand.NewPCG(testrand.Seed(t), 4))
	byteOf := func(x uint64, i int) uint64 { return x >> (8 * i) & 0xff }
	cmpbge := func(a, b uint64) (r uint64) {
		for i := 0; i < 8; i++ {
			if byteOf(a, i) >= byteOf(b, i) {
				r |= 1 << i
			}
		}
		return r
	}
	zapnot := func(a, m uint64) (r uint64) {
		for i := 0; i < 8; i++ {
			if m>>i&1 != 0 {
				r |= byteOf(a, i) << (8 * i)
			}
		}
		return r
	}
	// Every top-bit pattern, which is all Cmpbge's gather step sees.
	for m := 0; m < 256; m++ {
		var a uint64
		for i := 0; i < 8; i++ {
			if m>>i&1 != 0 {
				a |= 0x80 << (8 * i)
			}
		}
		if got := Cmpbge(a, 0x8080808080808080); got != uint64(m) {
			t.Fatalf("Cmpbge gather of pattern %#x: %#x", m, got)
		}
	}
	for i := 0; i < 200000; i++ {
		a, b := rng.Uint64(), rng.Uint64()
		if i%2 == 0 {
			b = a ^ rng.Uint64()&0x0181018101810181
		}
		if got, want := Cmpbge(a, b), cmpbge(a, b); got != want {
			t.Fatalf("Cmpbge(%#x, %#x) = %#x, want %#x", a, b, got, want)
		}
		if got, want := Zapnot(a, b), zapnot(a, b&0xff); got != want {
			t.Fatalf("Zapnot(%#x, %#x) = %#x, want %#x", a, b, got, want)
		}
		// Handbook: byte_mask = mask << Rbv<2:0>; the low and high forms
		// zap with byte_mask<7:0> and byte_mask<15:8>.
		off := b & 7
		for _, w := range []struct {
			mask                   uint64
			insl, insh, mskl, mskh func(a, b uint64) uint64
		}{
			{0x03, InsWL, InsWH, MskWL, MskWH},
			{0x0f, InsLL, InsLH, MskLL, MskLH},
			{0xff, InsQL, InsQH, MskQL, MskQH},
		} {
			bm := w.mask << off
			if got, want := w.mskl(a, b), zapnot(a, ^bm&0xff); got != want {
				t.Fatalf("msk%xl(%#x, %d) = %#x, want %#x", w.mask, a, off, got, want)
			}
			if got, want := w.mskh(a, b), zapnot(a, ^(bm>>8)&0xff); got != want {
				t.Fatalf("msk%xh(%#x, %d) = %#x, want %#x", w.mask, a, off, got, want)
			}
			if got, want := w.insl(a, b), zapnot(a<<(8*off), bm&0xff); got != want {
				t.Fatalf("ins%xl(%#x, %d) = %#x, want %#x", w.mask, a, off, got, want)
			}
			var hi uint64
			if off != 0 {
				hi = zapnot(a>>(64-8*off), bm>>8)
			}
			if got := w.insh(a, b); got != hi {
				t.Fatalf("ins%xh(%#x, %d) = %#x, want %#x", w.mask, a, off, got, hi)
			}
		}
		hi, _ := bits.Mul64(a, b)
		if Umulh(a, b) != hi {
			t.Fatalf("Umulh")
		}
	}
}

func TestIntNoAllocs(t *testing.T) {
	var s uint64
	n := testing.AllocsPerRun(100, func() {
		s += ExtQL(q0, s) + Zapnot(q0, s) + Cmpbge(q0, s) + InsWH(q0, s) + Minsb8(q0, s)
	})
	if n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}

// BenchmarkIntByteOps: the hot byte operations beside a plain shift.
func BenchmarkIntByteOps(b *testing.B) {
	xs := [4]uint64{q0, 0xfedcba9876543210, 3, 0x7f80ff017f80ff01}
	for _, c := range []struct {
		name string
		f    func(a, b uint64) uint64
	}{
		{"baseline-shift", func(a, b uint64) uint64 { return a >> (b & 63) }},
		{"ExtQL", ExtQL},
		{"ExtQH", ExtQH},
		{"Zapnot", Zapnot},
		{"Cmpbge", Cmpbge},
		{"InsWH", InsWH},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var s uint64
			for i := 0; b.Loop(); i++ {
				s += c.f(xs[i&3], xs[(i+1)&3]+s)
			}
			benchSink = s
		})
	}
}
