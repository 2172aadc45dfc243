package alpha

import "math/bits"

// PAL functions user code may call (Linux/Alpha OSF PALcode); see
// ALPHA-NOTES.md.
const (
	PalBPT     = 0x80
	PalBUGCHK  = 0x81
	PalCALLSYS = 0x83
	PalIMB     = 0x86
	PalRDUNIQ  = 0x9e
	PalWRUNIQ  = 0x9f
	PalGENTRAP = 0xaa
	PalCLRFEN  = 0xae

	// PalRDPIC is a hwsim extension, not 21164 behaviour: an unprivileged
	// read of two 64-bit event counts, after UltraSPARC's user-readable
	// PICs (PLDI'97 paper sec. 5.1). The 21164's own counters are 16, 16
	// and 14 bits wide and reachable only through the privileged
	// wrperfmon. 0xb0 is unused by Linux/Alpha's and OSF/1's user PAL
	// functions (0x80-0x86, 0x92, 0x9e, 0x9f, 0xaa, 0xae, 0xbe), so
	// qemu-alpha raises SIGILL on it. See CPU.PICEvents and docs/hwsim.md.
	PalRDPIC = 0xb0

	// Privileged (kernel mode) PAL functions of the OSF/1 PALcode that the
	// simulated kernel uses.
	PalCSERVE = 0x09 // console service: here, a call into the simulator
	PalSWPIPL = 0x35
	PalRDPS   = 0x36
	PalWHAMI  = 0x3c
	PalRETSYS = 0x3d
	PalWTINT  = 0x3e
	PalRTI    = 0x3f
)

// Run executes instructions until the cycle counter reaches until, and
// returns how many it executed. It stops early, with c.Trap set, at a
// system call, a fault, a PAL call the OS must see, or a performance
// counter interrupt that is due (TrapEvent). An instruction that would
// issue at or after until, or after a due interrupt, is not executed: c.PC
// is left on it, the interrupted instruction. For a system call c.PC
// already points past the CALL_PAL, as the PALcode leaves it.
//
// Without a timing model (c.Timing nil) every instruction takes a cycle.
//
// With ProfileMe on (c.Me), Run also counts fetched instructions and
// records the tagged one (profileme.go).
func (c *CPU) Run(until uint64) uint64 {
	if c.Me == nil {
		return c.run(until)
	}
	n := c.run(until)
	c.meEnd()
	return n
}

// run is Run without ProfileMe's end of run. It runs the loop specialized
// for the features on, so that a feature that is off costs nothing per
// instruction: the checks of the 21264 core, of ProfileMe and of
// OnTransfer inside one loop, though they always fail when the features
// are off, cost the functional loop on matmul 112.5 host instructions a
// simulated one against 81.0 without them (callgrind; docs/hwsim.md,
// "Simulator speed").
//
// The loops are one source: runAll, below, whose feature checks are each
// guarded by one of four constants; runloops.go holds its copies with the
// constants of each form, which the compiler folds (go test ./hwsim/alpha
// -run TestRunLoopsGenerated -update-runloops rewrites it).
func (c *CPU) run(until uint64) uint64 {
	switch {
	case c.OnTransfer != nil:
		return c.runAll(until)
	case c.Core != nil && c.Timing == nil:
		// The core counts ProfileMe's fetches itself, through its observer.
		return c.runCore(until)
	case c.Core != nil:
		return c.runAll(until)
	case c.Timing != nil && c.Me != nil:
		return c.runTimingMe(until)
	case c.Timing != nil:
		return c.runTiming(until)
	case c.Me != nil:
		return c.runAll(until)
	default:
		return c.runPlain(until)
	}
}

// runAll is the run loop with every feature's check: the template of the
// specialized loops (runloops.go), and the loop for the rare cases they
// leave out (an OnTransfer hook, ProfileMe without a timing model).
func (c *CPU) runAll(until uint64) uint64 {
	// The features this form of the loop checks for: the 21164's issue
	// model (Timing), the 21264's core (Core), ProfileMe on the 21164 or
	// without a timing model (Me), and the OnTransfer hook.
	const timed, cored, profileMe, hooks = true, true, true, true
	c.Trap = Trap{}
	if c.AS != nil && c.asGen != c.AS.gen {
		c.flushTLB()
	}
	var (
		r       = &c.R
		f       = &c.F
		done    uint64
		code    *codePage
		codeVPN = ^uint64(0)
		tm      = c.Timing
		core    = c.Core
	)
	for {
		pc := c.PC
		if pc>>PageShift != codeVPN || c.codeStale {
			// Step (step.go) keeps codeStale set, so that it returns here,
			// off the common path, after one instruction.
			if c.stepOnly && done > 0 {
				break
			}
			c.codeStale = c.stepOnly
			code = c.fetchPage(pc)
			if code == nil {
				c.Trap = Trap{Kind: TrapSegv, PC: pc, Addr: pc}
				break
			}
			codeVPN = pc >> PageShift
		}
		d := &code.insn[(pc&pageMask)>>2]

		at := c.Cycle + 1
		if timed && tm != nil {
			ea := uint64(d.Imm) + r[d.Rb&63] // meaningful for the memory format only
			at = tm.issue(d, pc, ea)
		} else if cored && core != nil {
			ea := uint64(d.Imm) + r[d.Rb&63]
			at = core.Retire(d, pc, ea)
		}
		// One comparison on the common path: limit is the earlier of the
		// budget's end and a deliverable counter interrupt.
		if at >= c.limit(until) {
			c.stopBefore(pc, at, until)
			break
		}
		start := c.Cycle
		if timed && tm != nil {
			start = tm.last
		}
		if profileMe && c.Me != nil && core == nil {
			// The 21264 core counts its own fetches, wrong path
			// included, through its observer (hwsim's ProfileMe).
			c.meStart(d, at)
		}
		c.Cycle = at
		c.PC = pc + 4

		// Operand b of the operate format: a register or the literal.
		b := uint64(d.Imm)
		if !d.Lit {
			b = r[d.Rb&63]
		}
		a := r[d.Ra&63]
		if timed && tm != nil && tm.Values != nil {
			tm.Values.operands(d, r, f)
		}

		switch d.Op {
		// Loads and stores. The effective address is Rb + displacement;
		// for these b is the base register (Lit is never set).
		case OpLDA:
			r[d.Ra&63] = b + uint64(d.Imm)
		case OpLDAH:
			r[d.Ra&63] = b + uint64(d.Imm)
		case OpLDQ:
			v, ok := c.load64(b + uint64(d.Imm))
			if !ok {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
			r[d.Ra&63] = v
		case OpLDL:
			v, ok := c.load32(b + uint64(d.Imm))
			if !ok {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
			r[d.Ra&63] = uint64(int64(int32(v)))
		case OpLDWU:
			v, ok := c.load16(b + uint64(d.Imm))
			if !ok {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
			r[d.Ra&63] = uint64(v)
		case OpLDBU:
			v, ok := c.load8(b + uint64(d.Imm))
			if !ok {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
			r[d.Ra&63] = uint64(v)
		case OpLDQU:
			ea := (b + uint64(d.Imm)) &^ 7
			v, ok := c.load64(ea)
			if !ok {
				c.segv(pc, ea)
				return done
			}
			r[d.Ra&63] = v
		case OpLDLL, OpLDQL:
			ea := b + uint64(d.Imm)
			var v uint64
			var ok bool
			if d.Op == OpLDLL {
				var w uint32
				w, ok = c.load32(ea)
				v = uint64(int64(int32(w)))
			} else {
				v, ok = c.load64(ea)
			}
			if !ok {
				c.segv(pc, ea)
				return done
			}
			r[d.Ra&63] = v
			c.lockValid, c.lockAddr = true, ea&^15
		case OpSTQ:
			if !c.store64(b+uint64(d.Imm), a) {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
		case OpSTL:
			if !c.store32(b+uint64(d.Imm), uint32(a)) {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
		case OpSTW:
			if !c.store16(b+uint64(d.Imm), uint16(a)) {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
		case OpSTB:
			if !c.store8(b+uint64(d.Imm), uint8(a)) {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
		case OpSTQU:
			ea := (b + uint64(d.Imm)) &^ 7
			if !c.store64(ea, a) {
				c.segv(pc, ea)
				return done
			}
		case OpSTLC, OpSTQC:
			ea := b + uint64(d.Imm)
			success := c.lockValid && c.lockAddr == ea&^15
			c.lockValid = false
			if success {
				var ok bool
				if d.Op == OpSTLC {
					ok = c.store32(ea, uint32(a))
				} else {
					ok = c.store64(ea, a)
				}
				if !ok {
					c.segv(pc, ea)
					return done
				}
			}
			if d.Ra != 31 {
				r[d.Ra&63] = b2u(success)
			}

		case OpLDS, OpLDF:
			v, ok := c.load32(b + uint64(d.Imm))
			if !ok {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
			if d.Op == OpLDS {
				f[d.Ra&63] = LdsToReg(v)
			} else {
				f[d.Ra&63] = LdfToReg(v)
			}
		case OpLDT, OpLDG:
			v, ok := c.load64(b + uint64(d.Imm))
			if !ok {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
			if d.Op == OpLDG {
				v = LdgToReg(v)
			}
			f[d.Ra&63] = v
		case OpSTS, OpSTF:
			v := RegToSts(f[d.Ra&63])
			if d.Op == OpSTF {
				v = RegToStf(f[d.Ra&63])
			}
			if !c.store32(b+uint64(d.Imm), v) {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}
		case OpSTT, OpSTG:
			v := f[d.Ra&63]
			if d.Op == OpSTG {
				v = RegToStg(v)
			}
			if !c.store64(b+uint64(d.Imm), v) {
				c.segv(pc, b+uint64(d.Imm))
				return done
			}

		// Control flow.
		case OpBR:
			r[d.Ra&63] = pc + 4
			c.PC = pc + 4 + uint64(d.Imm)
		case OpBEQ:
			if a == 0 {
				c.PC = pc + 4 + uint64(d.Imm)
			}
		case OpBNE:
			if a != 0 {
				c.PC = pc + 4 + uint64(d.Imm)
			}
		case OpBLT:
			if int64(a) < 0 {
				c.PC = pc + 4 + uint64(d.Imm)
			}
		case OpBLE:
			if int64(a) <= 0 {
				c.PC = pc + 4 + uint64(d.Imm)
			}
		case OpBGT:
			if int64(a) > 0 {
				c.PC = pc + 4 + uint64(d.Imm)
			}
		case OpBGE:
			if int64(a) >= 0 {
				c.PC = pc + 4 + uint64(d.Imm)
			}
		case OpBLBC:
			if a&1 == 0 {
				c.PC = pc + 4 + uint64(d.Imm)
			}
		case OpBLBS:
			if a&1 != 0 {
				c.PC = pc + 4 + uint64(d.Imm)
			}
		case OpFBEQ, OpFBNE, OpFBLT, OpFBLE, OpFBGT, OpFBGE:
			if fpCond(d.Op, f[d.Ra&63]) {
				c.PC = pc + 4 + uint64(d.Imm)
			}
		case OpJMP:
			// Read the target before writing the link: Ra may equal Rb.
			target := r[d.Rb&63] &^ 3
			r[d.Ra&63] = pc + 4
			c.PC = target

		// Integer arithmetic.
		case OpADDL:
			r[d.Rc&63] = sext32(a + b)
		case OpS4ADDL:
			r[d.Rc&63] = sext32(a<<2 + b)
		case OpS8ADDL:
			r[d.Rc&63] = sext32(a<<3 + b)
		case OpSUBL:
			r[d.Rc&63] = sext32(a - b)
		case OpS4SUBL:
			r[d.Rc&63] = sext32(a<<2 - b)
		case OpS8SUBL:
			r[d.Rc&63] = sext32(a<<3 - b)
		case OpADDQ:
			r[d.Rc&63] = a + b
		case OpS4ADDQ:
			r[d.Rc&63] = a<<2 + b
		case OpS8ADDQ:
			r[d.Rc&63] = a<<3 + b
		case OpSUBQ:
			r[d.Rc&63] = a - b
		case OpS4SUBQ:
			r[d.Rc&63] = a<<2 - b
		case OpS8SUBQ:
			r[d.Rc&63] = a<<3 - b
		case OpADDLV, OpSUBLV, OpADDQV, OpSUBQV, OpMULLV, OpMULQV:
			var v uint64
			var ovf bool
			switch d.Op {
			case OpADDLV:
				v, ovf = AddLV(a, b)
			case OpSUBLV:
				v, ovf = SubLV(a, b)
			case OpADDQV:
				v, ovf = AddQV(a, b)
			case OpSUBQV:
				v, ovf = SubQV(a, b)
			case OpMULLV:
				v, ovf = MulLV(a, b)
			default:
				v, ovf = MulQV(a, b)
			}
			r[d.Rc&63] = v
			if ovf {
				// Integer overflow traps after writing the result.
				c.Trap = Trap{Kind: TrapArith, PC: pc}
				r[31] = 0
				return done
			}
		case OpCMPEQ:
			r[d.Rc&63] = b2u(a == b)
		case OpCMPLT:
			r[d.Rc&63] = b2u(int64(a) < int64(b))
		case OpCMPLE:
			r[d.Rc&63] = b2u(int64(a) <= int64(b))
		case OpCMPULT:
			r[d.Rc&63] = b2u(a < b)
		case OpCMPULE:
			r[d.Rc&63] = b2u(a <= b)
		case OpCMPBGE:
			r[d.Rc&63] = Cmpbge(a, b)

		// Logical and conditional moves.
		case OpAND:
			r[d.Rc&63] = a & b
		case OpBIC:
			r[d.Rc&63] = a &^ b
		case OpBIS:
			r[d.Rc&63] = a | b
		case OpORNOT:
			r[d.Rc&63] = a | ^b
		case OpXOR:
			r[d.Rc&63] = a ^ b
		case OpEQV:
			r[d.Rc&63] = a ^ ^b
		case OpCMOVLBS:
			if a&1 != 0 {
				r[d.Rc&63] = b
			}
		case OpCMOVLBC:
			if a&1 == 0 {
				r[d.Rc&63] = b
			}
		case OpCMOVEQ:
			if a == 0 {
				r[d.Rc&63] = b
			}
		case OpCMOVNE:
			if a != 0 {
				r[d.Rc&63] = b
			}
		case OpCMOVLT:
			if int64(a) < 0 {
				r[d.Rc&63] = b
			}
		case OpCMOVGE:
			if int64(a) >= 0 {
				r[d.Rc&63] = b
			}
		case OpCMOVLE:
			if int64(a) <= 0 {
				r[d.Rc&63] = b
			}
		case OpCMOVGT:
			if int64(a) > 0 {
				r[d.Rc&63] = b
			}
		case OpAMASK:
			// AMASK clears the bits of features the CPU has.
			r[d.Rc&63] = b &^ uint64(c.Model.Ext)
		case OpIMPLVER:
			r[d.Rc&63] = c.Model.Implver

		// Shifts and byte manipulation.
		case OpSLL:
			r[d.Rc&63] = a << (b & 63)
		case OpSRL:
			r[d.Rc&63] = a >> (b & 63)
		case OpSRA:
			r[d.Rc&63] = uint64(int64(a) >> (b & 63))
		case OpEXTBL:
			r[d.Rc&63] = ExtBL(a, b)
		case OpEXTWL:
			r[d.Rc&63] = ExtWL(a, b)
		case OpEXTLL:
			r[d.Rc&63] = ExtLL(a, b)
		case OpEXTQL:
			r[d.Rc&63] = ExtQL(a, b)
		case OpEXTWH:
			r[d.Rc&63] = ExtWH(a, b)
		case OpEXTLH:
			r[d.Rc&63] = ExtLH(a, b)
		case OpEXTQH:
			r[d.Rc&63] = ExtQH(a, b)
		case OpINSBL:
			r[d.Rc&63] = InsBL(a, b)
		case OpINSWL:
			r[d.Rc&63] = InsWL(a, b)
		case OpINSLL:
			r[d.Rc&63] = InsLL(a, b)
		case OpINSQL:
			r[d.Rc&63] = InsQL(a, b)
		case OpINSWH:
			r[d.Rc&63] = InsWH(a, b)
		case OpINSLH:
			r[d.Rc&63] = InsLH(a, b)
		case OpINSQH:
			r[d.Rc&63] = InsQH(a, b)
		case OpMSKBL:
			r[d.Rc&63] = MskBL(a, b)
		case OpMSKWL:
			r[d.Rc&63] = MskWL(a, b)
		case OpMSKLL:
			r[d.Rc&63] = MskLL(a, b)
		case OpMSKQL:
			r[d.Rc&63] = MskQL(a, b)
		case OpMSKWH:
			r[d.Rc&63] = MskWH(a, b)
		case OpMSKLH:
			r[d.Rc&63] = MskLH(a, b)
		case OpMSKQH:
			r[d.Rc&63] = MskQH(a, b)
		case OpZAP:
			r[d.Rc&63] = Zap(a, b)
		case OpZAPNOT:
			r[d.Rc&63] = Zapnot(a, b)

		// Multiplies.
		case OpMULL:
			r[d.Rc&63] = sext32(a * b)
		case OpMULQ:
			r[d.Rc&63] = a * b
		case OpUMULH:
			hi, _ := bits.Mul64(a, b)
			r[d.Rc&63] = hi

		// Opcode 0x1C extensions (BWX, CIX, MVI, FIX).
		case OpSEXTB, OpSEXTW, OpCTPOP, OpCTLZ, OpCTTZ, OpPERR, OpUNPKBW, OpUNPKBL,
			OpPKWB, OpPKLB, OpMINSB8, OpMINSW4, OpMINUB8, OpMINUW4, OpMAXUB8, OpMAXUW4,
			OpMAXSB8, OpMAXSW4, OpFTOIT, OpFTOIS:
			c.execExt(d, a, b)

		// FP operates and the 0x1C extensions have methods of their own, so
		// that this switch reads as the integer and memory instructions
		// that dominate; each pays one call.
		case OpITOFT, OpITOFS, OpITOFF, OpSQRTS, OpSQRTT, OpADDS, OpSUBS, OpMULS,
			OpDIVS, OpADDT, OpSUBT, OpMULT, OpDIVT, OpCMPTUN, OpCMPTEQ, OpCMPTLT,
			OpCMPTLE, OpCVTTS, OpCVTST, OpCVTTQ, OpCVTQS, OpCVTQT, OpCVTLQ, OpCVTQL,
			OpCPYS, OpCPYSN, OpCPYSE, OpMTFPCR, OpMFFPCR, OpFCMOVEQ, OpFCMOVNE, OpFCMOVLT,
			OpFCMOVGE, OpFCMOVLE, OpFCMOVGT:
			c.execFloat(d, a)

		// Barriers, hints and counters: no functional effect here.
		case OpTRAPB, OpEXCB, OpMB, OpWMB, OpFETCH, OpECB, OpWH64:
		case OpRPCC:
			r[d.Ra&63] = c.Cycle & 0xffffffff
		case OpRC, OpRS:
			// The 21164 keeps an "interrupt flag" per CPU for these; user
			// code never uses them meaningfully.
			r[d.Ra&63] = 0

		case OpCallPal:
			if !c.pal(pc, uint32(d.Imm)) {
				return done
			}
			if c.codeStale {
				codeVPN = ^uint64(0)
			}

		case OpInvalid, OpUnimpl:
			w, _ := c.FetchWord(pc)
			kind := TrapIllegal
			if d.Op == OpUnimpl {
				kind = TrapUnimpl
			}
			c.Trap = Trap{Kind: kind, PC: pc, Word: w}
			c.PC = pc
			return done
		}
		if timed && tm != nil {
			tm.commit(d, pc, at, c.PC)
			if tm.events != 1<<EvIssues {
				c.PMU.record(tm.events, at, pc, c.Retired)
			}
			if tm.Truth != nil {
				cl := &classOf[d.Op]
				tm.Truth.record(pc, c.PC, at-start, tm, cl.Branch || cl.Jump || d.Op == OpBR)
			}
			if tm.Values != nil {
				tm.Values.recordValues(c, tm, d, pc)
			}
		}
		if profileMe && c.meTag.on {
			c.meRetire(d, pc, at, at-start)
		}
		if profileMe && c.Me != nil && core == nil {
			c.meBranch(d, pc, c.PC)
		}
		if cored && core != nil {
			if ev := core.Commit(d, pc, c.PC); ev != 1<<EvIssues {
				c.PMU.record(ev, at, pc, c.Retired)
			}
		}
		if hooks && c.OnTransfer != nil && c.PC != pc+4 {
			c.OnTransfer(pc, c.PC)
		}
		if slowLoop {
			slowNop() // speedguard_slow builds only (slowloop.go)
		}
		done++
		c.Retired++
	}
	if c.Trap.Kind != TrapNone {
		c.PC = c.Trap.PC
	}
	return done
}

// execFloat executes the FP operate instructions (opcodes 0x14, 0x16,
// 0x17): a is the integer register Ra, for ITOFx; Fa and Fb come from the
// FP file.
func (c *CPU) execFloat(d *Decoded, a uint64) {
	f := &c.F
	switch d.Op {
	case OpITOFT:
		f[d.Rc&63] = a
	case OpITOFS:
		f[d.Rc&63] = Itofs(a)
	case OpITOFF:
		f[d.Rc&63] = LdfToReg(uint32(a))
	case OpSQRTS:
		f[d.Rc&63] = SqrtS(f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpSQRTT:
		f[d.Rc&63] = SqrtT(f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpADDS:
		f[d.Rc&63] = AddS(f[d.Ra&63], f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpSUBS:
		f[d.Rc&63] = SubS(f[d.Ra&63], f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpMULS:
		f[d.Rc&63] = MulS(f[d.Ra&63], f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpDIVS:
		f[d.Rc&63] = DivS(f[d.Ra&63], f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpADDT:
		f[d.Rc&63] = AddT(f[d.Ra&63], f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpSUBT:
		f[d.Rc&63] = SubT(f[d.Ra&63], f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpMULT:
		f[d.Rc&63] = MulT(f[d.Ra&63], f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpDIVT:
		f[d.Rc&63] = DivT(f[d.Ra&63], f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpCMPTUN:
		f[d.Rc&63] = CmpTUn(f[d.Ra&63], f[d.Rb&63], &c.FPCR)
	case OpCMPTEQ:
		f[d.Rc&63] = CmpTEq(f[d.Ra&63], f[d.Rb&63], &c.FPCR)
	case OpCMPTLT:
		f[d.Rc&63] = CmpTLt(f[d.Ra&63], f[d.Rb&63], &c.FPCR)
	case OpCMPTLE:
		f[d.Rc&63] = CmpTLe(f[d.Ra&63], f[d.Rb&63], &c.FPCR)
	case OpCVTTS:
		f[d.Rc&63] = CvtTS(f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpCVTST:
		f[d.Rc&63] = CvtST(f[d.Rb&63], &c.FPCR)
	case OpCVTTQ:
		f[d.Rc&63] = CvtTQ(f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpCVTQS:
		f[d.Rc&63] = CvtQS(f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpCVTQT:
		f[d.Rc&63] = CvtQT(f[d.Rb&63], c.rounding(d), &c.FPCR)
	case OpCVTLQ:
		f[d.Rc&63] = CvtLQ(f[d.Rb&63])
	case OpCVTQL:
		f[d.Rc&63] = CvtQL(f[d.Rb&63])
	case OpCPYS:
		f[d.Rc&63] = Cpys(f[d.Ra&63], f[d.Rb&63])
	case OpCPYSN:
		f[d.Rc&63] = Cpysn(f[d.Ra&63], f[d.Rb&63])
	case OpCPYSE:
		f[d.Rc&63] = Cpyse(f[d.Ra&63], f[d.Rb&63])
	case OpMTFPCR:
		c.FPCR = FPCR(f[d.Ra&63])
	case OpMFFPCR:
		f[d.Ra&63] = uint64(c.FPCR)
	case OpFCMOVEQ, OpFCMOVNE, OpFCMOVLT, OpFCMOVGE, OpFCMOVLE, OpFCMOVGT:
		if fpCond(d.Op, f[d.Ra&63]) {
			f[d.Rc&63] = f[d.Rb&63]
		}
	}
}

// execExt executes the opcode 0x1C extensions: sign extension (BWX),
// counts (CIX), multimedia (MVI) and FP-to-integer moves (FIX). b is
// operand b, the register Rb or the literal.
func (c *CPU) execExt(d *Decoded, a, b uint64) {
	r, f := &c.R, &c.F
	switch d.Op {
	case OpSEXTB:
		r[d.Rc&63] = uint64(int64(int8(b)))
	case OpSEXTW:
		r[d.Rc&63] = uint64(int64(int16(b)))
	case OpCTPOP:
		r[d.Rc&63] = uint64(bits.OnesCount64(b))
	case OpCTLZ:
		r[d.Rc&63] = uint64(bits.LeadingZeros64(b))
	case OpCTTZ:
		r[d.Rc&63] = uint64(bits.TrailingZeros64(b))
	case OpPERR:
		r[d.Rc&63] = Perr(a, b)
	case OpUNPKBW:
		r[d.Rc&63] = Unpkbw(b)
	case OpUNPKBL:
		r[d.Rc&63] = Unpkbl(b)
	case OpPKWB:
		r[d.Rc&63] = Pkwb(b)
	case OpPKLB:
		r[d.Rc&63] = Pklb(b)
	case OpMINSB8:
		r[d.Rc&63] = Minsb8(a, b)
	case OpMINSW4:
		r[d.Rc&63] = Minsw4(a, b)
	case OpMINUB8:
		r[d.Rc&63] = Minub8(a, b)
	case OpMINUW4:
		r[d.Rc&63] = Minuw4(a, b)
	case OpMAXUB8:
		r[d.Rc&63] = Maxub8(a, b)
	case OpMAXUW4:
		r[d.Rc&63] = Maxuw4(a, b)
	case OpMAXSB8:
		r[d.Rc&63] = Maxsb8(a, b)
	case OpMAXSW4:
		r[d.Rc&63] = Maxsw4(a, b)
	case OpFTOIT:
		r[d.Rc&63] = f[d.Ra&63]
	case OpFTOIS:
		r[d.Rc&63] = Ftois(f[d.Ra&63])
	}
}

// stopBefore stops Run before the instruction at pc, which would issue at
// cycle at, no earlier than limit(until): a counter interrupt is due
// (TrapEvent), or the instruction issues after the budget.
func (c *CPU) stopBefore(pc, at, until uint64) {
	tm := c.Timing
	if due := c.PMU.nextDeliver; at >= due && due <= until && c.IPL < counterIPL {
		c.Trap = Trap{Kind: TrapEvent, PC: pc}
		// On the 21264 the core's observer counts the interrupted
		// instruction's fetch and reports it killed; here only the
		// 21164's issue model, which fetches nothing ahead, does.
		if c.Me != nil && c.Core == nil {
			var last uint64
			if tm != nil {
				last = tm.last
			}
			c.meInterrupted(pc, due, due-min(due, last))
		}
		if c.Core != nil {
			c.Core.Stop(pc, due)
		}
		if tm != nil && tm.Truth != nil && due > tm.last {
			// The cycles this instruction has waited so far are its,
			// though it issues only after the interrupt.
			tm.Truth.wait(pc, due-tm.last)
		}
		return
	}
	// The instruction issues after the budget: the CPU spends the rest of
	// it stalled, the instruction still at the head of the issue queue,
	// where the next Run finds it. (Time spent outside the pipeline, in
	// interrupts or waits, is for the caller to declare with
	// Timing.Restart.)
	c.Cycle = max(c.Cycle, until)
	if c.Core != nil {
		c.Core.Stop(pc, until)
	}
	if tm != nil && until > tm.last {
		if tm.Truth != nil {
			tm.Truth.wait(pc, until-tm.last)
		}
		tm.last = until
	}
}

// limit returns the first cycle at which an instruction may not simply
// issue: past the budget, or at a counter interrupt that may be taken.
func (c *CPU) limit(until uint64) uint64 {
	if due := c.PMU.nextDeliver; due <= until && c.IPL < counterIPL {
		return due
	}
	return until + 1
}

// counterIPL is the interrupt priority level of performance counter
// interrupts: code running at or above it defers them (sec. 4.1.3).
const counterIPL = 6

// pal executes a CALL_PAL and reports whether execution continues.
func (c *CPU) pal(pc uint64, fn uint32) bool {
	switch fn {
	case PalCALLSYS:
		c.Trap = Trap{Kind: TrapSyscall, PC: pc}
		c.Retired++ // the call itself completes; the OS resumes after it
		return false
	case PalRDUNIQ:
		c.R[0] = c.Unique
	case PalWRUNIQ:
		c.Unique = c.R[16]
	case PalIMB:
		// Instruction memory barrier: make stores visible to fetch.
		c.codeStale = true
	case PalCLRFEN:
		// Clearing the FP-enable bit only matters to the kernel's lazy FP
		// context switching, which this OS does not do.
	case PalRDPIC:
		// v0 and t0: the running process's counts of the two events,
		// every instruction before this one included (the PMU records
		// this one's events after it executes).
		c.R[0] = c.PICBase[0] + c.PMU.Totals[c.PICEvents[0]]
		c.R[1] = c.PICBase[1] + c.PMU.Totals[c.PICEvents[1]]
	case PalBPT, PalBUGCHK:
		c.Trap = Trap{Kind: TrapBreakpoint, PC: pc, Code: uint64(fn)}
		c.PC = pc
		return false
	case PalGENTRAP:
		c.Trap = Trap{Kind: TrapGentrap, PC: pc, Code: c.R[16]}
		c.PC = pc
		return false
	default:
		if c.Kernel && fn < 0x40 {
			return c.privilegedPal(pc, fn)
		}
		w, _ := c.FetchWord(pc)
		c.Trap = Trap{Kind: TrapHalt, PC: pc, Word: w, Code: uint64(fn)}
		c.PC = pc
		return false
	}
	return true
}

// privilegedPal executes a kernel-mode PAL call.
func (c *CPU) privilegedPal(pc uint64, fn uint32) bool {
	switch fn {
	case PalCSERVE:
		c.Trap = Trap{Kind: TrapSimcall, PC: pc, Code: c.R[16]}
		c.Retired++
		return false
	case PalRETSYS, PalRTI:
		c.Trap = Trap{Kind: TrapReturn, PC: pc, Code: uint64(fn)}
		c.Retired++
		return false
	case PalWTINT:
		c.Trap = Trap{Kind: TrapWait, PC: pc}
		c.Retired++
		return false
	case PalSWPIPL:
		c.R[0], c.IPL = uint64(c.IPL), uint8(c.R[16]&7)
	case PalRDPS:
		c.R[0] = uint64(c.IPL) << 8
	case PalWHAMI:
		c.R[0] = uint64(c.ID)
	default:
		w, _ := c.FetchWord(pc)
		c.Trap = Trap{Kind: TrapHalt, PC: pc, Word: w, Code: uint64(fn)}
		c.PC = pc
		return false
	}
	return true
}

func (c *CPU) segv(pc, addr uint64) {
	c.Trap = Trap{Kind: TrapSegv, PC: pc, Addr: addr}
	c.PC = pc
	c.R[SinkReg] = 0
}

// rounding resolves an FP instruction's rounding qualifier, reading the
// FPCR's dynamic rounding field for /D.
//
// Without /U, a result that would be denormal is flushed to zero, as the
// 21164 does in hardware.
func (c *CPU) rounding(d *Decoded) Rounding {
	return Qual(d.Qual).Rounding(c.FPCR)
}

func fpCond(op Op, v uint64) bool {
	switch op {
	case OpFBEQ, OpFCMOVEQ:
		return FEq(v)
	case OpFBNE, OpFCMOVNE:
		return FNe(v)
	case OpFBLT, OpFCMOVLT:
		return FLt(v)
	case OpFBLE, OpFCMOVLE:
		return FLe(v)
	case OpFBGT, OpFCMOVGT:
		return FGt(v)
	default:
		return FGe(v)
	}
}

func sext32(v uint64) uint64 { return uint64(int64(int32(v))) }

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
