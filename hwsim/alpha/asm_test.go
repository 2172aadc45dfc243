package alpha

// A few encoders for hand-written test programs.

func encMem(opc, ra, rb uint32, disp int16) uint32 {
	return opc<<26 | ra<<21 | rb<<16 | uint32(uint16(disp))
}

func encOp(opc, fn, ra, rb, rc uint32) uint32 {
	return opc<<26 | ra<<21 | rb<<16 | fn<<5 | rc
}

func encOpLit(opc, fn, ra, lit, rc uint32) uint32 {
	return opc<<26 | ra<<21 | lit<<13 | 1<<12 | fn<<5 | rc
}

func encBr(opc, ra uint32, disp int32) uint32 {
	return opc<<26 | ra<<21 | uint32(disp)&0x1fffff
}

func encFP(opc, fn, fa, fb, fc uint32) uint32 {
	return opc<<26 | fa<<21 | fb<<16 | fn<<5 | fc
}

func encPal(fn uint32) uint32 { return fn }

// loadProgram maps code at base (r-x) and a data page at data (rw-) and
// returns a CPU ready to run it.
func loadProgram(m Model, base uint64, code []uint32, data uint64) *CPU {
	as := NewAddressSpace()
	as.Map(base, uint64(len(code))*4, PermR|PermX)
	b := make([]byte, 4*len(code))
	for i, w := range code {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	if err := as.WriteBytes(base, b); err != nil {
		panic(err)
	}
	if data != 0 {
		as.Map(data, PageSize, PermR|PermW)
	}
	c := NewCPU(m)
	c.Load(&Context{PC: base}, as)
	return c
}
