package alpha

// The issue classes of the 21164 issue model: for each operation, the pipes
// it may issue to, its result latency, the non-pipelined unit it occupies
// and the registers it reads and writes. Timing (pipeline.go) reads this
// table on every instruction it issues; package analysis/sched reads the
// same table through ClassOf to schedule code statically, so the two cannot
// drift apart.

// IssueBlockShift is log2 of the issue block: the 21164 issues up to
// IssueWidth instructions a cycle from one naturally aligned 16-byte block,
// and the next block waits until every instruction of the current one has
// issued.
const IssueBlockShift = 4

// IssueWidth is the most instructions issued in one cycle.
const IssueWidth = 4

// Pipes is a set of issue pipes.
type Pipes uint8

// The 21164's issue pipes: two integer (E0, E1), FP add (FA) and FP
// multiply (FM).
const (
	PipeE0 Pipes = 1 << iota
	PipeE1
	PipeFA
	PipeFM
	PipeE01 = PipeE0 | PipeE1
	PipeFAM = PipeFA | PipeFM
)

// First returns the pipe an instruction takes from the free pipes p: E0
// before E1, FA before FM (0 if p is empty).
func (p Pipes) First() Pipes { return p & -p }

// Unit is a functional unit that is not pipelined.
type Unit uint8

// The non-pipelined units.
const (
	UnitNone Unit = iota
	UnitMul       // integer multiplier
	UnitFDiv      // FP divider
	NumUnits
)

// IssueClass is the static timing of an operation.
type IssueClass struct {
	Pipes   Pipes
	Lat     uint8 // cycles until the result can be used (loads: the memory system's)
	Busy    uint8 // cycles a non-pipelined unit stays busy
	Unit    Unit
	ReadsA  bool  // Ra is a source
	ReadsB  bool  // Rb is a source (unless the literal is used)
	FPA     bool  // Ra names an FP register
	FPB     bool  // Rb names an FP register
	Writes  uint8 // 0 none, 'a' Ra, 'c' Rc
	FPDst   bool  // the destination is an FP register
	Load    bool  // a load (or a prefetch): may not issue with a store
	Store   bool  // a store: may not issue with a load
	Branch  bool  // conditional branch: predicted
	Jump    bool  // JMP/JSR/RET: predicted with the return stack
	Barrier bool  // MB, WMB, TRAPB, EXCB: wait for the write buffer
}

// ClassOf returns the issue class of op (the zero class, no pipes, for an
// out-of-range op).
func ClassOf(op Op) IssueClass {
	if int(op) >= len(classOf) {
		return IssueClass{}
	}
	return classOf[op]
}

// classOf is the issue class of every operation, indexed by Op.
var classOf [numOps]IssueClass

func init() {
	set := func(c IssueClass, ops ...Op) {
		for _, op := range ops {
			classOf[op] = c
		}
	}
	intOp := IssueClass{Pipes: PipeE01, Lat: 1, ReadsA: true, ReadsB: true, Writes: 'c'}
	set(intOp, OpADDL, OpS4ADDL, OpS8ADDL, OpSUBL, OpS4SUBL, OpS8SUBL, OpADDQ, OpS4ADDQ,
		OpS8ADDQ, OpSUBQ, OpS4SUBQ, OpS8SUBQ, OpADDLV, OpSUBLV, OpADDQV, OpSUBQV, OpCMPEQ,
		OpCMPLT, OpCMPLE, OpCMPULT, OpCMPULE, OpCMPBGE, OpAND, OpBIC, OpBIS, OpORNOT, OpXOR,
		OpEQV, OpAMASK, OpIMPLVER, OpSEXTB, OpSEXTW)
	cmov := intOp
	cmov.Lat = 2
	set(cmov, OpCMOVLBS, OpCMOVLBC, OpCMOVEQ, OpCMOVNE, OpCMOVLT, OpCMOVGE, OpCMOVLE, OpCMOVGT)
	shift := intOp
	shift.Pipes = PipeE0
	set(shift, OpSLL, OpSRL, OpSRA, OpEXTBL, OpEXTWL, OpEXTLL, OpEXTQL, OpEXTWH, OpEXTLH,
		OpEXTQH, OpINSBL, OpINSWL, OpINSLL, OpINSQL, OpINSWH, OpINSLH, OpINSQH, OpMSKBL,
		OpMSKWL, OpMSKLL, OpMSKQL, OpMSKWH, OpMSKLH, OpMSKQH, OpZAP, OpZAPNOT, OpCTPOP,
		OpCTLZ, OpCTTZ)
	mvi := shift
	mvi.Lat = 2
	set(mvi, OpPERR, OpUNPKBW, OpUNPKBL, OpPKWB, OpPKLB, OpMINSB8, OpMINSW4, OpMINUB8,
		OpMINUW4, OpMAXUB8, OpMAXUW4, OpMAXSB8, OpMAXSW4)
	mul := IssueClass{Pipes: PipeE0, Unit: UnitMul, ReadsA: true, ReadsB: true, Writes: 'c'}
	mul.Lat, mul.Busy = 8, 4
	set(mul, OpMULL, OpMULLV)
	mul.Lat, mul.Busy = 12, 8
	set(mul, OpMULQ, OpMULQV)
	mul.Lat, mul.Busy = 14, 8
	set(mul, OpUMULH)

	lda := IssueClass{Pipes: PipeE01, Lat: 1, ReadsB: true, Writes: 'a'}
	set(lda, OpLDA, OpLDAH)
	load := IssueClass{Pipes: PipeE01, Lat: 2, ReadsB: true, Writes: 'a', Load: true}
	set(load, OpLDBU, OpLDWU, OpLDL, OpLDQ, OpLDQU, OpLDLL, OpLDQL)
	fload := load
	fload.FPDst = true
	set(fload, OpLDF, OpLDG, OpLDS, OpLDT)
	store := IssueClass{Pipes: PipeE0, ReadsA: true, ReadsB: true, Store: true}
	set(store, OpSTB, OpSTW, OpSTL, OpSTQ, OpSTQU)
	stc := store
	stc.Writes, stc.Lat = 'a', 2
	set(stc, OpSTLC, OpSTQC)
	fstore := store
	fstore.FPA = true
	set(fstore, OpSTF, OpSTG, OpSTS, OpSTT)
	set(IssueClass{Pipes: PipeE01, Lat: 1, ReadsB: true, Load: true}, OpFETCH, OpWH64, OpECB)
	set(IssueClass{Pipes: PipeE0, Barrier: true}, OpMB, OpWMB, OpTRAPB, OpEXCB)
	set(IssueClass{Pipes: PipeE0, Lat: 2, Writes: 'a'}, OpRPCC, OpRC, OpRS)

	set(IssueClass{Pipes: PipeE1, ReadsA: true, Branch: true}, OpBEQ, OpBNE, OpBLT, OpBLE, OpBGT,
		OpBGE, OpBLBC, OpBLBS)
	set(IssueClass{Pipes: PipeE1, Lat: 1, Writes: 'a'}, OpBR)
	set(IssueClass{Pipes: PipeE1, Lat: 1, ReadsB: true, Writes: 'a', Jump: true}, OpJMP)
	set(IssueClass{Pipes: PipeFA, ReadsA: true, FPA: true, Branch: true}, OpFBEQ, OpFBNE, OpFBLT,
		OpFBLE, OpFBGT, OpFBGE)
	set(IssueClass{Pipes: PipeE1}, OpCallPal, OpInvalid, OpUnimpl)

	fadd := IssueClass{Pipes: PipeFA, Lat: 4, ReadsA: true, ReadsB: true, FPA: true, FPB: true, Writes: 'c', FPDst: true}
	set(fadd, OpADDS, OpSUBS, OpADDT, OpSUBT, OpCMPTUN, OpCMPTEQ, OpCMPTLT, OpCMPTLE,
		OpCVTTS, OpCVTTQ, OpCVTQS, OpCVTQT, OpCVTST, OpCVTLQ, OpCVTQL, OpFCMOVEQ, OpFCMOVNE,
		OpFCMOVLT, OpFCMOVGE, OpFCMOVLE, OpFCMOVGT)
	fmul := fadd
	fmul.Pipes = PipeFM
	set(fmul, OpMULS, OpMULT)
	cpys := fadd
	cpys.Pipes = PipeFAM
	set(cpys, OpCPYS, OpCPYSN, OpCPYSE)
	fdiv := fadd
	fdiv.Unit, fdiv.Lat, fdiv.Busy = UnitFDiv, 15, 15
	set(fdiv, OpDIVS, OpSQRTS)
	fdiv.Lat, fdiv.Busy = 22, 22
	set(fdiv, OpDIVT, OpSQRTT)
	set(IssueClass{Pipes: PipeFA, Lat: 4, ReadsA: true, FPA: true, Writes: 'a', FPDst: true}, OpMFFPCR)
	set(IssueClass{Pipes: PipeFA, Lat: 4, ReadsA: true, FPA: true}, OpMTFPCR)
	set(IssueClass{Pipes: PipeE0, Lat: 4, ReadsA: true, Writes: 'c', FPDst: true}, OpITOFS, OpITOFF, OpITOFT)
	set(IssueClass{Pipes: PipeFA, Lat: 4, ReadsA: true, FPA: true, Writes: 'c'}, OpFTOIT, OpFTOIS)
}
