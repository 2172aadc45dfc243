package valuemod

import (
	"math"
	"strings"
	"testing"

	"dcpi/hwsim/alpha"
)

func TestLookup(t *testing.T) {
	for _, name := range []string{"loadlat", "regvals", "semiinv"} {
		if m, err := Lookup(name); err != nil || m.Name != name {
			t.Errorf("Lookup(%q) = %v, %v", name, m, err)
		}
	}
	_, err := Lookup("nosuch")
	if err == nil || !strings.Contains(err.Error(), `"nosuch"`) || !strings.Contains(err.Error(), "known: loadlat, regvals, semiinv") {
		t.Fatalf("Lookup(nosuch): %v", err)
	}
}

func TestSpecs(t *testing.T) {
	loadlat, _ := Lookup("loadlat")
	regvals, _ := Lookup("regvals")
	semiinv, _ := Lookup("semiinv")
	for _, c := range []struct {
		m    *Module
		op   alpha.Op
		want Capture
	}{
		{loadlat, alpha.OpLDQ, CapLatency}, {loadlat, alpha.OpLDT, CapLatency}, {loadlat, alpha.OpFETCH, 0},
		{loadlat, alpha.OpADDQ, 0}, {loadlat, alpha.OpSTQ, 0},
		{regvals, alpha.OpADDQ, CapResult}, {regvals, alpha.OpLDQ, CapResult}, {regvals, alpha.OpSTQ, 0},
		{semiinv, alpha.OpADDQ, CapOperandA | CapOperandB}, {semiinv, alpha.OpLDQ, CapOperandB},
	} {
		if got := c.m.Spec(c.op, alpha.ClassOf(c.op)); got != c.want {
			t.Errorf("%s: %v captures %b, want %b", c.m.Name, c.op, got, c.want)
		}
	}
}

func TestEmitAndFormat(t *testing.T) {
	m, _ := Lookup("semiinv")
	var got []Value
	m.Emit([]Tuple{{PC: 8, Got: CapOperandA | CapOperandB, A: 1, B: 2}, {PC: 12, Got: CapOperandA, A: 3}}, func(v Value) { got = append(got, v) })
	want := []Value{{8, KindOperandA, 1}, {8, KindOperandB, 2}, {12, KindOperandA, 3}}
	if len(got) != len(want) {
		t.Fatalf("emitted %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("emitted %v, want %v", got, want)
		}
	}
	// addt f1,f2,f3 (opcode 0x16, function 0x0a0) writes an FP register:
	// its result prints as a float; an integer result in hex.
	addt := uint32(0x16)<<26 | 1<<21 | 2<<16 | 0x0a0<<5 | 3
	if s := FormatRegister(KindResult, addt, math.Float64bits(2.5)); s != "2.5" {
		t.Errorf("FP result formats as %q", s)
	}
	addq := uint32(0x10)<<26 | 1<<21 | 2<<16 | 0x20<<5 | 3
	if s := FormatRegister(KindResult, addq, 255); s != "0xff" {
		t.Errorf("integer result formats as %q", s)
	}
}
