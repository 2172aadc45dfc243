package alpha

import (
	"dcpi/internal/testrand"
	"math"
	"math/rand/v2"
	"testing"
)

func TestFPCRLayout(t *testing.T) {
	// Linux's ieee_swcr_to_fpcr(0) | FPCR_DYN_NORMAL, which is also what
	// qemu-alpha starts a user program with (testdata/ops/vectors.txt.gz
	// carries it as fpcr_in).
	if got := FPCRTrapsDisabled | FPCRDynNormal; got != 0x680e800000000000 {
		t.Errorf("initial FPCR %#x", uint64(got))
	}
	if FPCRStatus != 0x03f0000000000000 {
		t.Errorf("status mask %#x", uint64(FPCRStatus))
	}
	for _, c := range []struct {
		f FPCR
		r Rounding
	}{{FPCRDynChopped, Chopped}, {FPCRDynMinus, MinusInf}, {FPCRDynNormal, Nearest}, {FPCRDynPlus, PlusInf}} {
		if got := (c.f | FPCRTrapsDisabled | FPCRSum).RoundingMode(); got != c.r {
			t.Errorf("RoundingMode(%#x) = %v, want %v", uint64(c.f), got, c.r)
		}
	}
	var c FPCR
	c.Record(0)
	if c != 0 {
		t.Errorf("Record(0) changed the FPCR: %#x", uint64(c))
	}
	c.Record(ExcInv | ExcIov)
	if c != FPCRInv|FPCRIov|FPCRSum || c.Status() != ExcInv|ExcIov {
		t.Errorf("Record(inv|iov): %#x, status %v", uint64(c), c.Status())
	}
	if s := (ExcInv | ExcIne).String(); s != "inv|ine" {
		t.Errorf("Exc.String = %q", s)
	}
}

func TestFPDecodeFunc(t *testing.T) {
	cases := []struct {
		fn    uint16
		base  uint16
		q     Qual
		round Rounding // with the FPCR's DYN = plus
		traps Exc      // of inv|unf|ine|iov
		cvtst bool
	}{
		{0x0a0, 0x20, QualNormal, Nearest | FlushUnderflow, ExcInv, false},                                    // addt
		{0x020, 0x20, QualChopped, Chopped | FlushUnderflow, ExcInv, false},                                   // addt/c
		{0x060, 0x20, QualMinus, MinusInf | FlushUnderflow, ExcInv, false},                                    // addt/m
		{0x0e0, 0x20, QualDynamic, PlusInf | FlushUnderflow, ExcInv, false},                                   // addt/d
		{0x1a0, 0x20, QualNormal | QualU, Nearest, ExcInv | ExcUnf | ExcIov, false},                           // addt/u
		{0x5a0, 0x20, QualNormal | QualU | QualS, Nearest, ExcInv | ExcUnf | ExcIov, false},                   // addt/su
		{0x7e0, 0x20, QualDynamic | QualU | QualI | QualS, PlusInf, ExcInv | ExcUnf | ExcIne | ExcIov, false}, // addt/suid
		{0x72f, 0x2f, QualChopped | QualV | QualI | QualS, Chopped, ExcInv | ExcUnf | ExcIne | ExcIov, false}, // cvttq/svic
		{0x52f, 0x2f, QualChopped | QualV | QualS, Chopped, ExcInv | ExcUnf | ExcIov, false},                  // cvttq/svc
		{0x7bc, 0x3c, QualNormal | QualU | QualI | QualS, Nearest, ExcInv | ExcUnf | ExcIne | ExcIov, false},  // cvtqs/sui
		{0x2ac, 0x2c, QualNormal | QualI, Nearest | FlushUnderflow, ExcInv | ExcIne, true},                    // cvtst
		{0x6ac, 0x2c, QualNormal | QualI | QualS, Nearest | FlushUnderflow, ExcInv | ExcIne, true},            // cvtst/s
		{0x5ac, 0x2c, QualNormal | QualU | QualS, Nearest, ExcInv | ExcUnf | ExcIov, false},                   // cvtts/su
		{0x530, 0x30, QualV | QualS, Chopped, ExcInv | ExcUnf | ExcIov, false},                                // cvtql/sv
		{0x08b, 0x0b, QualNormal, Nearest | FlushUnderflow, ExcInv, false},                                    // sqrts
	}
	for _, c := range cases {
		base, q := DecodeFPFunc(c.fn)
		if base != c.base || q != c.q {
			t.Errorf("DecodeFPFunc(%#x) = %#x, %#x; want %#x, %#x", c.fn, base, q, c.base, c.q)
			continue
		}
		if got := q.Rounding(FPCRDynPlus); got != c.round {
			t.Errorf("%#x: Rounding = %v, want %v", c.fn, got, c.round)
		}
		if got := q.Traps(ExcInv | ExcUnf | ExcIne | ExcIov); got != c.traps {
			t.Errorf("%#x: Traps = %v, want %v", c.fn, got, c.traps)
		}
		if cvtst := base == 0x2c && q&(QualI|QualU) == QualI; cvtst != c.cvtst {
			t.Errorf("%#x: CVTST test says %v", c.fn, cvtst)
		}
		// The decoder keeps the same qualifier bits.
		w := encFP(0x16, uint32(c.fn), 1, 2, 3)
		if c.base == 0x0b {
			w = encFP(0x14, uint32(c.fn), 31, 2, 3)
		}
		if c.base == 0x30 {
			w = encFP(0x17, uint32(c.fn), 31, 2, 3)
		}
		if d := Decode(w, EV67); Qual(d.Qual) != q {
			t.Errorf("%#x: Decoded.Qual %#x, DecodeFPFunc %#x", c.fn, d.Qual, q)
		}
		// qualRounding agrees with Qual.Rounding for the static modes.
		if q&QualRoundMask != QualDynamic && qualRounding[q&3] != q.Rounding(0)&3 {
			t.Errorf("%#x: qualRounding disagrees", c.fn)
		}
	}
}

func TestFPInputTraps(t *testing.T) {
	for _, c := range []struct {
		x          uint64
		arith, cmp bool
	}{
		{0, false, false}, {tNegZero, false, false}, {tOne, false, false}, {tMax, false, false},
		{tMinDen, true, true}, {tMaxDen | tSign, true, true}, {tPInf, true, false}, {tNInf, true, false},
		{tQNaN, true, true}, {tSNaN, true, true}, {LdsToReg(1), true, true},
	} {
		if got := InputTraps(c.x, false); got != c.arith {
			t.Errorf("InputTraps(%#x, arith) = %v", c.x, got)
		}
		if got := InputTraps(c.x, true); got != c.cmp {
			t.Errorf("InputTraps(%#x, compare) = %v", c.x, got)
		}
	}
}

// TestFPSinglesFastPath checks finishS's shortcut (one conversion to
// float32) against rounding through roundPack for random singles,
// denormals included.
func TestFPSinglesFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(testrand.Seed(t), 7))
	randS := func() uint32 {
		e := uint32(rng.IntN(256))
		if rng.IntN(4) == 0 {
			e = uint32(rng.IntN(3))
		}
		return rng.Uint32()&0x807fffff | e<<23
	}
	for i := 0; i < 200000; i++ {
		x32, y32 := randS(), randS()
		if isNaNS(x32) || isNaNS(y32) || x32&0x7f800000 == 0x7f800000 || y32&0x7f800000 == 0x7f800000 {
			continue
		}
		x, y := float64(math.Float32frombits(x32)), float64(math.Float32frombits(y32))
		check := func(name string, got, s float64, errSign int) {
			if s == 0 {
				return
			}
			r, _ := roundFloat64(s, errSign, Nearest, &fmtS)
			if math.Float64bits(got) != LdsToReg(uint32(r)) {
				t.Fatalf("%s(%#x, %#x): %#x, round-and-pack %#x", name, x32, y32, math.Float64bits(got), LdsToReg(uint32(r)))
			}
		}
		var c FPCR
		s := x + y
		check("adds", f64(AddS(LdsToReg(x32), LdsToReg(y32), Nearest, &c)), s, signOf(twoSumErr(x, y, s)))
		check("muls", f64(MulS(LdsToReg(x32), LdsToReg(y32), Nearest, &c)), x*y, 0)
		if y != 0 {
			q := x / y
			check("divs", f64(DivS(LdsToReg(x32), LdsToReg(y32), Nearest, &c)), q, signOf(math.FMA(-q, y, x))*signOf(y))
		}
	}
}
