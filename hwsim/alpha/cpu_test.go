package alpha

import (
	"testing"
)

const (
	codeBase = 0x120000000
	dataBase = 0x140000000
)

// halt ends a test program: callsys stops Run with TrapSyscall.
var halt = encPal(PalCALLSYS)

func runProgram(t *testing.T, m Model, code []uint32, setup func(*CPU)) *CPU {
	t.Helper()
	c := loadProgram(m, codeBase, append(code, halt), dataBase)
	if setup != nil {
		setup(c)
	}
	c.Run(1_000_000)
	if c.Trap.Kind != TrapSyscall {
		t.Fatalf("program stopped with %v, want the final callsys", c.Trap)
	}
	return c
}

func TestLoopSumsIntegers(t *testing.T) {
	// r1 = 100; r2 = 0; loop: r2 += r1; r1 -= 1; bne r1, loop
	code := []uint32{
		encMem(0x08, 1, 31, 100),      // lda r1, 100(zero)
		encOp(0x11, 0x20, 31, 31, 2),  // bis zero, zero, r2
		encOp(0x10, 0x20, 2, 1, 2),    // addq r2, r1, r2
		encOpLit(0x10, 0x29, 1, 1, 1), // subq r1, 1, r1
		encBr(0x3d, 1, -3),            // bne r1, loop
	}
	c := runProgram(t, EV5, code, nil)
	if c.R[2] != 5050 {
		t.Fatalf("sum = %d, want 5050", c.R[2])
	}
	if c.Retired != 2+3*100+1 {
		t.Fatalf("retired %d instructions, want %d", c.Retired, 2+3*100+1)
	}
}

func TestZeroRegisterIgnoresWrites(t *testing.T) {
	code := []uint32{
		encMem(0x08, 31, 31, 77),     // lda zero, 77(zero)
		encOp(0x10, 0x20, 31, 31, 1), // addq zero, zero, r1
	}
	c := runProgram(t, EV5, code, nil)
	if c.R[31] != 0 || c.R[1] != 0 {
		t.Fatalf("r31 = %d, r1 = %d; want both 0", c.R[31], c.R[1])
	}
}

func TestLoadsStoresAndSignExtension(t *testing.T) {
	code := []uint32{
		encMem(0x09, 1, 31, 0x1400),   // ldah r1, 0x1400(zero) -> 0x14000000
		encOpLit(0x12, 0x39, 1, 4, 1), // sll r1, 4, r1 -> 0x140000000
		encMem(0x08, 2, 31, -2),       // lda r2, -2
		encMem(0x2c, 2, 1, 8),         // stl r2, 8(r1)
		encMem(0x28, 3, 1, 8),         // ldl r3, 8(r1): sign-extended
		encMem(0x29, 4, 1, 8),         // ldq r4, 8(r1): 0x00000000fffffffe
		encMem(0x2d, 2, 1, 16),        // stq r2, 16(r1)
		encMem(0x0b, 5, 1, 19),        // ldq_u r5, 19(r1): the quadword at 16
	}
	c := runProgram(t, EV5, code, nil)
	if c.R[1] != dataBase {
		t.Fatalf("address = %#x, want %#x", c.R[1], uint64(dataBase))
	}
	if int64(c.R[3]) != -2 {
		t.Errorf("ldl = %#x, want sign-extended -2", c.R[3])
	}
	if c.R[4] != 0xfffffffe {
		t.Errorf("ldq of stored longword = %#x, want 0xfffffffe", c.R[4])
	}
	if int64(c.R[5]) != -2 {
		t.Errorf("ldq_u = %#x, want -2", c.R[5])
	}
}

func TestJsrAndRet(t *testing.T) {
	// r27 = address of the function at word 4; jsr ra,(r27); halt
	// function: lda r1, 42; ret (ra)
	code := []uint32{
		encMem(0x09, 27, 31, 0x1200),       // ldah r27, 0x1200 -> 0x12000000
		encOpLit(0x12, 0x39, 27, 4, 27),    // sll r27, 4 -> 0x120000000
		encMem(0x08, 27, 27, 20),           // lda r27, 20(r27): word 5
		0x1a<<26 | 26<<21 | 27<<16 | 1<<14, // jsr ra, (r27)
		encBr(0x30, 31, 2),                 // br +2 -> halt (word 7)
		encMem(0x08, 1, 31, 42),            // lda r1, 42
		0x1a<<26 | 31<<21 | 26<<16 | 2<<14, // ret zero, (ra)
	}
	c := runProgram(t, EV5, code, nil)
	if c.R[1] != 42 {
		t.Fatalf("r1 = %d, want 42", c.R[1])
	}
	if c.R[26] != codeBase+16 {
		t.Fatalf("ra = %#x, want %#x", c.R[26], uint64(codeBase+16))
	}
}

func TestMissingExtensionIsIllegal(t *testing.T) {
	ldbu := encMem(0x0a, 1, 30, 0) // BWX: absent on the 21164
	c := loadProgram(EV5, codeBase, []uint32{ldbu}, dataBase)
	c.R[30] = dataBase
	if n := c.Run(10); n != 0 || c.Trap.Kind != TrapIllegal || c.Trap.PC != codeBase || c.Trap.Word != ldbu {
		t.Fatalf("ev5 ran %d, trap %v; want an illegal-instruction trap naming the word", n, c.Trap)
	}
	c = loadProgram(EV56, codeBase, []uint32{ldbu, halt}, dataBase)
	c.R[30] = dataBase
	c.Run(10)
	if c.Trap.Kind != TrapSyscall {
		t.Fatalf("ev56 stopped with %v, want to run ldbu", c.Trap)
	}
}

func TestAmaskAndImplver(t *testing.T) {
	code := []uint32{
		encMem(0x08, 1, 31, -1),      // lda r1, -1
		encOp(0x11, 0x61, 31, 1, 2),  // amask r1, r2
		encOp(0x11, 0x6c, 31, 31, 3), // implver r3
	}
	for _, m := range Models {
		c := runProgram(t, m, code, nil)
		if c.R[2] != ^uint64(m.Ext) || c.R[3] != m.Implver {
			t.Errorf("%s: amask(-1) = %#x implver = %d; want %#x, %d", m.Name, c.R[2], c.R[3], ^uint64(m.Ext), m.Implver)
		}
	}
}

func TestUnmappedLoadFaultsWithAddress(t *testing.T) {
	code := []uint32{encMem(0x29, 1, 31, 0x100)} // ldq r1, 0x100(zero)
	c := loadProgram(EV5, codeBase, code, 0)
	c.Run(10)
	if c.Trap.Kind != TrapSegv || c.Trap.Addr != 0x100 || c.PC != codeBase {
		t.Fatalf("trap %v, pc %#x; want a segv at 0x100 with pc on the load", c.Trap, c.PC)
	}
}

func TestStoreToCodeDropsDecoding(t *testing.T) {
	// Word 2 is overwritten with "lda r1, 7" before it runs; after an imb
	// the new instruction must execute.
	newInsn := encMem(0x08, 1, 31, 7)
	code := []uint32{
		encMem(0x2c, 2, 3, 0),  // stl r2, 0(r3)  (r3 = address of word 3)
		encPal(PalIMB),         // imb
		encMem(0x08, 1, 31, 1), // lda r1, 1 -- overwritten
	}
	c := loadProgram(EV5, codeBase, append(code, halt), 0)
	c.AS.Protect(codeBase, PageSize, PermR|PermW|PermX)
	c.R[2] = uint64(newInsn)
	c.R[3] = codeBase + 8
	c.Run(100)
	if c.Trap.Kind != TrapSyscall || c.R[1] != 7 {
		t.Fatalf("r1 = %d (trap %v); want the rewritten instruction's 7", c.R[1], c.Trap)
	}
}

func TestForkIsCopyOnWrite(t *testing.T) {
	as := NewAddressSpace()
	as.Map(dataBase, PageSize, PermR|PermW)
	as.WriteBytes(dataBase, []byte{1})
	child := as.Fork()
	child.WriteBytes(dataBase, []byte{2})
	var a, b [1]byte
	as.ReadBytes(dataBase, a[:])
	child.ReadBytes(dataBase, b[:])
	if a[0] != 1 || b[0] != 2 {
		t.Fatalf("parent sees %d, child %d; want 1 and 2", a[0], b[0])
	}
	// A CPU store through the parent must not leak into a child either.
	as.Map(codeBase, PageSize, PermR|PermX)
	loadCode(as, codeBase, []uint32{encMem(0x2d, 2, 3, 0), halt}) // stq r2, 0(r3)
	child2 := as.Fork()
	c := NewCPU(EV5)
	c.Load(&Context{PC: codeBase}, as)
	c.R[2], c.R[3] = 0xabcdef, dataBase
	c.Run(10)
	var q, p [1]byte
	child2.ReadBytes(dataBase, q[:])
	as.ReadBytes(dataBase, p[:])
	if q[0] != 1 || p[0] != 0xef {
		t.Fatalf("after the parent's store: parent %#x, child %#x; want 0xef, 1", p[0], q[0])
	}
}

func loadCode(as *AddressSpace, base uint64, code []uint32) {
	b := make([]byte, 4*len(code))
	for i, w := range code {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	as.WriteBytes(base, b)
}

func TestUnalignedQuadwordIsCompleted(t *testing.T) {
	as := NewAddressSpace()
	as.Map(dataBase, 2*PageSize, PermR|PermW)
	as.Map(codeBase, PageSize, PermR|PermX)
	loadCode(as, codeBase, []uint32{
		encMem(0x2d, 2, 3, 0), // stq r2, 0(r3): r3 straddles two pages
		encMem(0x29, 4, 3, 0), // ldq r4, 0(r3)
		halt,
	})
	c := NewCPU(EV5)
	c.Load(&Context{PC: codeBase}, as)
	c.R[2], c.R[3] = 0x1122334455667788, dataBase+PageSize-3
	c.Run(10)
	if c.Trap.Kind != TrapSyscall || c.R[4] != 0x1122334455667788 {
		t.Fatalf("r4 = %#x, trap %v", c.R[4], c.Trap)
	}
}
