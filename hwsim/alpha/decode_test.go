package alpha

import (
	"testing"
)

// FuzzDecode checks that any word decodes without panicking, that register
// fields stay in range, and that an instruction the model lacks never
// decodes to something executable.
func FuzzDecode(f *testing.F) {
	for _, w := range []uint32{
		0x47ff041f,                    // nop (bis zero,zero,zero)
		0x2ffe0000,                    // unop (ldq_u zero,0(sp))
		encMem(0x29, 1, 30, 8),        // ldq
		encOpLit(0x12, 0x36, 1, 3, 2), // extql literal
		encBr(0x3d, 1, -3),            // bne
		0x6bfa8001,                    // ret
		encPal(PalCALLSYS),            // callsys
		encFP(0x16, 0x5a0, 1, 2, 3),   // addt/su
		encFP(0x16, 0x2ac, 31, 2, 3),  // cvtst
		encFP(0x17, 0x024, 1, 1, 1),   // mt_fpcr
		encOp(0x1c, 0x30, 31, 1, 2),   // ctpop
		encMem(0x0a, 1, 2, 0),         // ldbu
		0x64000000,                    // hw_mfpr: privileged
		0x18000000 | 0x4000,           // mb
		0x1c000000 | 0x70<<5,          // ftoit
	} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w uint32) {
		for _, m := range Models {
			d := Decode(w, m)
			if d.Op >= numOps {
				t.Fatalf("%#08x on %s: op %d out of range", w, m.Name, d.Op)
			}
			if d.Ra > SinkReg || d.Rb > SinkReg || d.Rc > SinkReg {
				t.Fatalf("%#08x on %s: registers %d %d %d out of range", w, m.Name, d.Ra, d.Rb, d.Rc)
			}
			full, ext := decode(w)
			if ext&^m.Ext != 0 && d.Op != OpInvalid {
				t.Fatalf("%#08x on %s: needs extensions %#x the model lacks, decoded to %d", w, m.Name, ext, d.Op)
			}
			if ext&^m.Ext == 0 && d != full {
				t.Fatalf("%#08x on %s: decoded differently from the model-free decode", w, m.Name)
			}
		}
	})
}

func TestDecodeFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    uint32
		want Decoded
	}{
		{"ldq", encMem(0x29, 1, 30, -8), Decoded{Op: OpLDQ, Ra: 1, Rb: 30, Imm: -8}},
		{"ldah shifts", encMem(0x09, 29, 27, 2), Decoded{Op: OpLDAH, Ra: 29, Rb: 27, Imm: 2 << 16}},
		{"lda to zero sinks", encMem(0x08, 31, 1, 4), Decoded{Op: OpLDA, Ra: SinkReg, Rb: 1, Imm: 4}},
		{"unop is a prefetch", 0x2ffe0000, Decoded{Op: OpFETCH, Ra: 31, Rb: 30}},
		{"addq literal", encOpLit(0x10, 0x20, 1, 255, 2), Decoded{Op: OpADDQ, Ra: 1, Lit: true, Imm: 255, Rc: 2}},
		{"cmpult to zero", encOp(0x10, 0x1d, 1, 2, 31), Decoded{Op: OpCMPULT, Ra: 1, Rb: 2, Rc: SinkReg}},
		{"bsr", encBr(0x34, 26, -1), Decoded{Op: OpBR, Ra: 26, Imm: -4}},
		{"br max forward", encBr(0x30, 31, 0xfffff), Decoded{Op: OpBR, Ra: SinkReg, Imm: 0xfffff * 4}},
		{"jsr", 0x6b5b4000, Decoded{Op: OpJMP, Ra: 26, Rb: 27, Imm: 0x4000}},
		{"addt/sud", encFP(0x16, 0x5e0, 1, 2, 3), Decoded{Op: OpADDT, Ra: 1, Rb: 2, Rc: 3, Qual: 0x5e0 >> 6}},
		{"cvttq/svc", encFP(0x16, 0x52f, 31, 2, 3), Decoded{Op: OpCVTTQ, Ra: 31, Rb: 2, Rc: 3, Qual: 0x52f >> 6}},
		{"cvtst/s", encFP(0x16, 0x6ac, 31, 2, 3), Decoded{Op: OpCVTST, Ra: 31, Rb: 2, Rc: 3, Qual: 0x6ac >> 6}},
		{"mf_fpcr", encFP(0x17, 0x025, 4, 4, 4), Decoded{Op: OpMFFPCR, Ra: 4, Rb: 4, Rc: 4}},
		{"callsys", 0x00000083, Decoded{Op: OpCallPal, Imm: 0x83}},
		{"reserved opcode", 0x04000000, Decoded{Op: OpInvalid}},
		{"hw_ld is privileged", 0x6c000000, Decoded{Op: OpInvalid}},
		{"vax addf unimplemented", encFP(0x15, 0x080, 1, 2, 3), Decoded{Op: OpUnimpl}},
	} {
		if got := Decode(tc.w, EV67); got != tc.want {
			t.Errorf("%s (%#08x): got %+v, want %+v", tc.name, tc.w, got, tc.want)
		}
	}
}
