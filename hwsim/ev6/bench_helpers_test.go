package ev6

import (
	"math/rand/v2"
	"testing"

	"dcpi/hwsim/alpha"
)

// Encoders for hand-written test loops (Alpha Architecture Handbook
// formats), so the microbenchmarks need no compiler and are exactly the
// instructions they mean.

const (
	codeBase = 0x120000000
	dataBase = 0x140000000
)

func mem(opc, ra, rb uint32, disp int16) uint32 {
	return opc<<26 | ra<<21 | rb<<16 | uint32(uint16(disp))
}
func op(opc, fn, ra, rb, rc uint32) uint32 { return opc<<26 | ra<<21 | rb<<16 | fn<<5 | rc }
func opLit(opc, fn, ra, lit, rc uint32) uint32 {
	return opc<<26 | ra<<21 | lit<<13 | 1<<12 | fn<<5 | rc
}
func br(opc, ra uint32, disp int32) uint32 { return opc<<26 | ra<<21 | uint32(disp)&0x1fffff }

func addqLit(ra, lit, rc uint32) uint32  { return opLit(0x10, 0x20, ra, lit, rc) }
func subqLit(ra, lit, rc uint32) uint32  { return opLit(0x10, 0x29, ra, lit, rc) }
func mulq(ra, rb, rc uint32) uint32      { return op(0x13, 0x20, ra, rb, rc) }
func ldq(ra, rb uint32, d int16) uint32  { return mem(0x29, ra, rb, d) }
func stq(ra, rb uint32, d int16) uint32  { return mem(0x2d, ra, rb, d) }
func lda(ra, rb uint32, d int16) uint32  { return mem(0x08, ra, rb, d) }
func ldah(ra, rb uint32, d int16) uint32 { return mem(0x09, ra, rb, d) }
func bis(ra, rb, rc uint32) uint32       { return op(0x11, 0x20, ra, rb, rc) }

// bne and blbs branch to the instruction index target from index at.
func bne(ra uint32, at, target int) uint32  { return br(0x3d, ra, int32(target-at-1)) }
func blbs(ra uint32, at, target int) uint32 { return br(0x3c, ra, int32(target-at-1)) }

const callsys = 0x83 // CALL_PAL callsys: ends a test program

// loop builds "r2 = n; loop: body...; subq r2, 1, r2; bne r2, loop;
// callsys", with the loop aligned to a fetch block, and returns the code
// and the index of the loop's first instruction.
func loop(setup []uint32, n int, body ...uint32) []uint32 {
	code := append([]uint32{}, setup...)
	code = append(code, ldah(2, 31, int16(n>>16)), lda(2, 2, int16(n&0xffff)))
	if n&0x8000 != 0 {
		code[len(code)-2] = ldah(2, 31, int16(n>>16+1))
	}
	for len(code)%4 != 0 {
		code = append(code, bis(31, 31, 31)) // nop
	}
	top := len(code)
	code = append(code, body...)
	code = append(code, subqLit(2, 1, 2))
	code = append(code, bne(2, len(code), top))
	return append(code, callsys)
}

// machine is one CPU with code at codeBase and size bytes of data at
// dataBase, timed by a 21264 core of parameters p.
type machine struct {
	cpu  *alpha.CPU
	core *Core
	as   *alpha.AddressSpace
}

func newMachine(t testing.TB, p Params, code []uint32, size uint64) *machine {
	t.Helper()
	as := alpha.NewAddressSpace()
	as.Map(codeBase, uint64(len(code))*4, alpha.PermR|alpha.PermX)
	b := make([]byte, 4*len(code))
	for i, w := range code {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	if err := as.WriteBytes(codeBase, b); err != nil {
		t.Fatal(err)
	}
	if size > 0 {
		as.Map(dataBase, size, alpha.PermR|alpha.PermW)
	}
	cpu := alpha.NewCPU(alpha.EV6)
	cpu.Load(&alpha.Context{PC: codeBase}, as)
	core, err := NewCore(cpu, p)
	if err != nil {
		t.Fatal(err)
	}
	return &machine{cpu: cpu, core: core, as: as}
}

func (m *machine) writeQuads(t testing.TB, addr uint64, v []uint64) {
	t.Helper()
	b := make([]byte, 8*len(v))
	for i, q := range v {
		for j := range 8 {
			b[8*i+j] = byte(q >> (8 * j))
		}
	}
	if err := m.as.WriteBytes(addr, b); err != nil {
		t.Fatal(err)
	}
}

// run runs the program to its callsys and returns the cycles it took.
func (m *machine) run(t testing.TB) uint64 {
	t.Helper()
	m.cpu.Run(1 << 40)
	if m.cpu.Trap.Kind != alpha.TrapSyscall {
		t.Fatalf("stopped with %v", m.cpu.Trap)
	}
	return m.cpu.Cycle
}

// perIteration runs body in a loop of n and of 2n iterations and returns
// the cycles one more iteration costs: the difference, free of start-up.
func perIteration(t testing.TB, p Params, setup func(*machine), n int, body ...uint32) (float64, *machine) {
	t.Helper()
	cycles := func(n int) (uint64, *machine) {
		m := newMachine(t, p, loop(setupCode, n, body...), dataSize)
		if setup != nil {
			setup(m)
		}
		return m.run(t), m
	}
	a, _ := cycles(n)
	b, m := cycles(2 * n)
	return float64(b-a) / float64(n), m
}

// The setup every benchmark shares: r4 = dataBase (0x140000000, built as
// 0x14 << 28: ldah's 16 signed bits cannot hold it).
var setupCode = []uint32{
	lda(4, 31, 0x14),
	opLit(0x12, 0x39, 4, 28, 4), // sll r4, 28, r4
}

const dataSize = 4 << 20

func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if got < want*(1-tol) || got > want*(1+tol) {
		t.Errorf("%s: %.3f, want %.3f within %.0f%%", name, got, want, 100*tol)
	} else {
		t.Logf("%s: %.3f (expected %.3f)", name, got, want)
	}
}

func randomBits(n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uint64() & 1
	}
	return v
}
