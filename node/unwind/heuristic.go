package unwind

// The fallback for a PC no table row covers (an image without .eh_frame,
// hand-written assembly without CFI): Alpha prologue analysis in the
// manner of gdb's alpha-tdep.c (alpha_heuristic_proc_start and
// alpha_heuristic_frame_unwind_cache), bounded.
//
// A sampled PC at a procedure's gp prologue (`ldah gp,H(t12)`, which only
// an entry computes from the procedure value) is the entry itself: nothing
// of the procedure has run, so it has no frame. (Scanning back from there
// would read the procedure before, whose last instruction may be a
// noreturn call rather than a ret; the oracle's per-sample check,
// TestStacksAgainstOracle in simhost, found such entries wrong.)
//
// Otherwise, scanning back from the PC, at most maxScan instructions and
// never below the image's base, it looks for the procedure's frame
// allocation, `lda sp,-N(sp)`. It skips epilogues met on the way (an early return's `lda
// sp,+N(sp); ret` lies before later code of the same procedure), except
// one just executed: the PC is then the `ret` and the frame is gone. It
// stops at the procedure's entry: the `ldah gp,H(t12)` that starts every
// procedure reached through its procedure value, or a `ret` followed by
// the nop padding that aligns the next procedure. Met the entry first,
// the procedure has no frame: the CFA is SP and the return address still
// in r26. Found, the allocation gives CFA = SP+N, and the instructions
// from it up to the PC are scanned forward for `stq ra,K(sp)` (RA saved
// at CFA-N+K), `stq fp,K(sp)` and `mov sp,fp` (the CFA is then based on
// FP, which alloca leaves alone). Only instructions before the PC count:
// they have executed. Neither found within the bound: the walk stops,
// Truncated.
//
// It is a heuristic: a procedure that allocates its frame in two steps,
// saves RA through another register, or is entered by bsr without a gp
// prologue and without padding before it, unwinds wrong; the walk's
// checks (CFA increasing, return address in executable code) usually stop
// it there rather than let it invent frames, and every step it scans
// costs reads (charged to the handler).

const maxScan = 1024 // instructions scanned back (and then forward) at most

const (
	opLDAH   = 0x09
	regGP    = 29
	regPV    = 27         // t12, the procedure value
	insnUnop = 0x2ffe0000 // ldq_u zero,0(sp)
	insnNop  = 0x47ff041f // bis zero,zero,zero
	insnFnop = 0x5fff041f // cpys f31,f31,f31
	opLDA    = 0x08
	opSTQ    = 0x2d
	opBIS    = 0x11 // with function 0x20
	opJMP    = 0x1a // jmp/jsr/ret/jsr_coroutine, by bits 15-14
	fnBIS    = 0x20
	hintRT   = 2
)

// heuristic makes a row for look, the sampled PC (frame 0, not yet
// executed) or a call instruction (frames above, executed).
func heuristic(im *Image, look uint64, frame0 bool, mem Memory, res *Result) (Row, bool) {
	if look&3 != 0 {
		return Row{}, false
	}
	end := look + 4 // instructions below end have executed
	if frame0 {
		end = look
	}
	var word insnReader
	frameless := Row{CFAReg: RegSP, RA: Same, RAReg: RegRA, FP: Same}
	if frame0 {
		// Sampled at a procedure's entry (its gp prologue, which only an
		// entry computes from t12): nothing of it has run, and the scan
		// back would read the procedure before.
		insn, ok := word.at(mem, look, res)
		if !ok {
			return Row{}, false
		}
		if insn>>26 == opLDAH && insn>>21&31 == regGP && insn>>16&31 == regPV {
			return frameless, true
		}
	}
	for n, a := 0, look-4; n < maxScan && a >= im.Base && a < look; n, a = n+1, a-4 {
		insn, ok := word.at(mem, a, res)
		if !ok {
			return Row{}, false
		}
		op, ra, rb := insn>>26, insn>>21&31, insn>>16&31
		switch {
		case op == opLDA && ra == RegSP && rb == RegSP:
			disp := int32(int16(insn))
			if disp < 0 {
				return forward(a, end, -disp, mem, &word, res)
			}
			if a+4 == end || a+8 == end {
				return frameless, true // the epilogue just popped the frame
			}
		case op == opLDAH && ra == regGP && rb == regPV:
			return frameless, true // the procedure's entry, no frame before the PC
		case op == opJMP && insn>>14&3 == hintRT && a+4 < look:
			// A ret followed by padding ends the procedure before.
			next, ok := word.at(mem, a+4, res)
			if !ok {
				return Row{}, false
			}
			if isNop(next) {
				return frameless, true
			}
		}
	}
	return Row{}, false
}

func isNop(insn uint32) bool { return insn == insnUnop || insn == insnNop || insn == insnFnop }

// forward scans from the frame allocation at a up to end for the saves.
func forward(a, end uint64, size int32, mem Memory, word *insnReader, res *Result) (Row, bool) {
	row := Row{CFAReg: RegSP, CFAOff: size, RA: Same, RAReg: RegRA, FP: Same}
	for n := 0; n < maxScan && a+4 < end; n++ {
		a += 4
		insn, ok := word.at(mem, a, res)
		if !ok {
			return Row{}, false
		}
		op, ra, rb := insn>>26, insn>>21&31, insn>>16&31
		disp := int32(int16(insn))
		switch {
		case op == opSTQ && rb == RegSP && ra == RegRA:
			row.RA, row.RAOff = AtCFA, disp-size
		case op == opSTQ && rb == RegSP && ra == RegFP:
			row.FP, row.FPOff = AtCFA, disp-size
		case op == opBIS && insn>>5&0x7f == fnBIS && insn>>12&1 == 0 && ra == RegSP && rb == RegSP && insn&31 == RegFP:
			row.CFAReg = RegFP // fp = sp: the CFA is fp+size from here on
		}
	}
	return row, true
}

// insnReader reads instruction words a quadword at a time, keeping the
// last quadword: a scan reads each quadword once.
type insnReader struct {
	addr  uint64
	quad  uint64
	valid bool
}

func (r *insnReader) at(mem Memory, a uint64, res *Result) (uint32, bool) {
	q := a &^ 7
	if !r.valid || r.addr != q {
		v, ok := read(mem, q, res)
		if !ok {
			return 0, false
		}
		r.addr, r.quad, r.valid = q, v, true
	}
	return uint32(r.quad >> ((a & 4) * 8)), true
}
