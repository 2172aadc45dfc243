package alpha

// The 21164 issue model (ALPHA-NOTES.md, "21164 pipeline"; gcc's ev5.md):
// in order, up to four instructions a cycle from one naturally aligned
// 16-byte block, the next block waiting until every instruction of the
// current one has issued; two integer pipes (E0, E1) and two FP pipes (FA,
// FM); results ready after each class's latency; the multiplier and the FP
// divider not pipelined. The memory system (caches, TLBs, write buffer) and
// branch prediction are behind MemorySystem and BranchUnit, implemented by
// package hwsim/timing. The per-operation table, IssueClass, is in
// issueclass.go, exported for the static scheduler (analysis/sched).

// Stall causes, for ground truth: static ones the code determines, dynamic
// ones the run does (DCPI paper sec. 6.3 draws the same line).
type StallCause uint8

// Causes of cycles an instruction waits at the head of the issue queue
// beyond its one issue cycle. The static ones come first: StallICache is
// the first dynamic cause.
const (
	StallSlot    StallCause = iota // static: pipe conflict or issue-block boundary
	StallRa                        // static: waiting for operand Ra from an earlier instruction
	StallRb                        // static: waiting for operand Rb, after any wait for Ra
	StallIMul                      // static: integer multiplier busy
	StallFDiv                      // static: FP divider busy
	StallICache                    // dynamic: I-cache miss
	StallITB                       // dynamic: ITB miss of a fetch
	StallDCache                    // dynamic: waiting for a load that missed the D-cache, or a load replayed on a full miss address file
	StallDTB                       // dynamic: DTB miss of a load or store
	StallMispred                   // dynamic: branch mispredict refetch
	StallWBuf                      // dynamic: write buffer full
	StallBarrier                   // dynamic: memory barrier draining the write buffer
	StallPAL                       // dynamic: a PAL call that runs in PALcode and returns (rdpic)
	NumStallCauses
)

var stallNames = [NumStallCauses]string{"slot", "ra", "rb", "imul", "fdiv", "icache", "itb", "dcache", "dtb", "mispredict", "wbuf", "barrier", "pal"}

func (s StallCause) String() string {
	if s >= NumStallCauses {
		return "stall?"
	}
	return stallNames[s]
}

// Dynamic reports whether the run, not the code, determines the cause.
func (s StallCause) Dynamic() bool { return s >= StallICache }

// ParseStallCause returns the cause String names.
func ParseStallCause(name string) (StallCause, bool) {
	for i, n := range stallNames {
		if n == name {
			return StallCause(i), true
		}
	}
	return 0, false
}

// RdpicCycles is what a CALL_PAL rdpic costs at the head of the issue
// queue, beyond its issue cycle. Assumption, reasoned like the TLB miss
// cost (hwsim/timing's DTBMissCycles): the 21164 enters PALcode by
// draining the pipeline and refetching at the PAL entry (about a
// mispredict's 5 cycles), the routine reads two counters into v0 and t0
// (a handful of instructions, about 5 cycles), and HW_REI restarts fetch
// at the caller (about 5 again), with some slack: 20. PALcode's own
// fetches and the events they would cause are not modelled.
const RdpicCycles = 20

// unitStall is the cause of waiting for each non-pipelined unit.
var unitStall = [NumUnits]StallCause{UnitMul: StallIMul, UnitFDiv: StallFDiv}

// MemorySystem is the timing of one CPU's caches, TLBs, write buffer and
// branch prediction (package hwsim/timing implements it). Physical
// addresses are the page frames of hwsim's memory: text pages shared by
// processes running the same image share cache lines, as they did on real
// machines.
type MemorySystem interface {
	// Fetch is called when execution enters a new 32-byte fetch block.
	// It returns the cycles fetch stalls, the first tlb of them (tlb <=
	// stall) for an ITB miss, the rest for the I-cache.
	Fetch(vpc, ppc, cycle uint64) (stall, tlb uint64, ev EventSet)
	// Load returns the cycles a load waits to issue, the first tlb of
	// them for a DTB miss, the rest replay traps on a full miss address
	// file; and its load-to-use latency.
	Load(va, pa, cycle uint64) (stall, tlb, latency uint64, ev EventSet)
	// Store returns the cycles a store waits to issue, the first tlb of
	// them for a DTB miss, the rest for the write buffer.
	Store(va, pa, cycle uint64) (stall, tlb uint64, ev EventSet)
	// Barrier returns the cycles a memory barrier waits to drain stores.
	Barrier(cycle uint64) uint64
	// Branch, Jump and Return resolve control flow and return the refetch
	// penalty of a misprediction; Call pushes a return address.
	Branch(pc, target uint64, taken bool) (penalty uint64, ev EventSet)
	Jump(pc uint64, hint uint16, target uint64) (penalty uint64, ev EventSet)
	Call(ret uint64)
	Return(target uint64) (penalty uint64, ev EventSet)
}

// Timing is the 21164 issue model of one CPU.
type Timing struct {
	Mem MemorySystem
	cpu *CPU

	ready      [2][64]uint64     // per register file, cycle each value is ready
	readyCause [2][64]StallCause // StallRa (a plain dependency) or StallDCache
	readyPC    [2][64]uint64     // the instruction that wrote it
	last       uint64            // issue cycle of the previous instruction
	lastBlock  uint64            // its 16-byte issue block
	slots      uint8             // instructions issued in cycle last
	used       Pipes             // pipes used in cycle last
	memOp      uint8             // 1 load, 2 store issued in cycle last
	fetchLine  uint64            // current 32-byte fetch block + 1; 0 none
	fetchReady uint64            // no instruction issues before this cycle
	fetchCause StallCause
	fetchTLB   uint64 // the wait for fetchReady is an ITB miss until this cycle
	palPC      uint64 // the rdpic being issued + 1, 0 none; it waits until palDone
	palDone    uint64
	unitFree   [NumUnits]uint64
	events     EventSet               // of the instruction being issued
	why        [NumStallCauses]uint32 // its stall cycles by cause
	lat        uint64                 // its result latency
	latCause   StallCause             // what a consumer waiting for it waits on
	regWaits   [2]RegWait             // its waits for operands, for Truth
	regCycles  [2]uint64              // and their cycles
	nRegWaits  uint8

	// Truth, if not nil, collects ground truth per PC.
	Truth *GroundTruth
	// Values, if not nil, collects value sampling's ground truth per PC
	// (valuetruth.go); the load being issued is noted for it in loadEv
	// and loadCycles when loadTimed.
	Values     *ValueTruth
	loadTimed  bool
	loadEv     EventSet
	loadCycles uint64
}

// Restart makes the next instruction issue no earlier than cycle, in a new
// group, as after an interrupt or a return from the kernel.
func (t *Timing) Restart(cycle uint64) {
	t.last = cycle
	t.lastBlock = ^uint64(0)
	t.fetchLine = 0
	t.fetchReady = cycle + 1
	t.fetchCause = StallSlot
	t.fetchTLB = 0
}

// issue returns the cycle instruction d at pc issues, and records why it
// waited. Memory accesses are timed here, with the effective address ea
// computed from the registers before execution, so that a load or store
// the memory system holds back (a full miss address file or write buffer:
// a replay trap on the 21164) stays at the head of the issue queue while
// it waits, where counter interrupts find it. issue updates the memory
// system but not the issue state: commit does that once the instruction
// has executed. An instruction issued again after an interrupt repeats its
// access, as a replayed one does.
func (t *Timing) issue(d *Decoded, pc, ea uint64) uint64 {
	t.why = [NumStallCauses]uint32{}
	t.nRegWaits = 0
	cl := &classOf[d.Op]
	t.events = 1 << EvIssues

	// The earliest cycle: with the previous instruction if it is in the
	// same issue block and a slot is free, else the next cycle.
	at := t.last + 1
	block := pc >> IssueBlockShift
	if block == t.lastBlock && t.slots < IssueWidth {
		at = t.last
	}
	if line := pc>>5 + 1; line != t.fetchLine {
		t.fetchLine = line
		stall, tlb, ev := t.Mem.Fetch(pc, t.cpu.codePhys(pc), t.last)
		t.events |= ev
		if stall > 0 && t.last+1+stall > t.fetchReady {
			// Kept in fetchReady so that an instruction that issues after
			// an interrupt or a budget stop still waits for its line. The
			// ITB is looked up first: its part of the wait comes first.
			t.fetchReady, t.fetchCause = t.last+1+stall, StallICache
			t.fetchTLB = t.last + 1 + tlb
		}
	}
	if t.fetchReady > at {
		t.raise(&at, t.fetchTLB, StallITB)
		t.raise(&at, t.fetchReady, t.fetchCause)
	}
	// A wait for an operand is the operand's dependency, or the D-cache's
	// if the value comes from a load that missed.
	if cl.ReadsA {
		if f, r := b2i(cl.FPA), d.Ra&63; t.ready[f][r] > at {
			cause := t.readyCause[f][r]
			if t.Truth != nil {
				t.noteRegWait(at, f, r, OperandRa, cause)
			}
			t.raise(&at, t.ready[f][r], cause)
		}
	}
	if cl.ReadsB && !d.Lit {
		if f, r := b2i(cl.FPB), d.Rb&63; t.ready[f][r] > at {
			cause := t.readyCause[f][r]
			if cause == StallRa {
				cause = StallRb
			}
			if t.Truth != nil {
				t.noteRegWait(at, f, r, OperandRb, cause)
			}
			t.raise(&at, t.ready[f][r], cause)
		}
	}
	if cl.Unit != UnitNone {
		t.raise(&at, t.unitFree[cl.Unit], unitStall[cl.Unit])
	}
	if at == t.last {
		// Same cycle: the pipe must be free, and a load and a store may
		// not issue together.
		free := cl.Pipes &^ t.used
		if free == 0 || (cl.Store && t.memOp == 1) || (cl.Load && t.memOp == 2) {
			t.raise(&at, at+1, StallSlot)
		}
	}
	t.lat, t.latCause = uint64(cl.Lat), StallRa
	switch {
	case cl.Load:
		if d.Op != OpFETCH && d.Op != OpWH64 && d.Op != OpECB {
			stall, tlb, l, ev := t.Mem.Load(ea, t.cpu.dataPhys(ea), at)
			t.events |= ev.With(EvLoads)
			if stall > 0 {
				t.why[StallDTB] += uint32(tlb)
				t.why[StallDCache] += uint32(stall - tlb)
				at += stall
			}
			t.lat = l
			if t.Values != nil {
				t.loadTimed, t.loadEv, t.loadCycles = true, ev, 1+stall+l
			}
			if ev.Has(EvDMiss) {
				t.latCause = StallDCache
			}
		}
	case cl.Store:
		stall, tlb, ev := t.Mem.Store(ea, t.cpu.dataPhys(ea), at)
		t.events |= ev.With(EvStores)
		if stall > 0 {
			t.why[StallDTB] += uint32(tlb)
			t.why[StallWBuf] += uint32(stall - tlb)
			at += stall
		}
	case cl.Barrier:
		if stall := t.Mem.Barrier(at); stall > 0 {
			t.why[StallBarrier] += uint32(stall)
			at += stall
		}
	case d.Op == OpCallPal && d.Imm == PalRDPIC:
		// Charged to the call itself, so that samples and ground truth
		// find its cost at its own PC. A call stopped before it issues
		// (the budget's end, an interrupt) waits only for the rest when
		// it is issued again, as a fetch does for fetchReady.
		if t.palPC != pc+1 {
			t.palPC, t.palDone = pc+1, at+RdpicCycles
		}
		t.raise(&at, t.palDone, StallPAL)
	}
	return at
}

// raise delays the issue cycle *at to to, if later, charging the cycles
// to cause.
func (t *Timing) raise(at *uint64, to uint64, cause StallCause) {
	if to > *at {
		t.why[cause] += uint32(to - *at)
		*at = to
	}
}

// noteRegWait notes, for Truth, that the instruction being issued waits
// from cycle at for register r of file f (1 for FP), its operand op, for
// cause.
func (t *Timing) noteRegWait(at uint64, f int, r uint8, op Operand, cause StallCause) {
	n := t.nRegWaits & 1 // at most one wait per operand
	t.regWaits[n] = RegWait{Producer: t.readyPC[f][r], Reg: uint8(f<<5) | r&31, Operand: op, Cause: cause}
	t.regCycles[n] = t.ready[f][r] - at
	t.nRegWaits++
}

// commit records that d issued at cycle at and that the next instruction
// is at next.
func (t *Timing) commit(d *Decoded, pc, at, next uint64) {
	cl := &classOf[d.Op]
	if at == t.last && pc>>IssueBlockShift == t.lastBlock {
		t.slots++
	} else {
		t.slots, t.used, t.memOp = 1, 0, 0
	}
	// Take the first free pipe of the class: E0 before E1, FA before FM.
	free := cl.Pipes &^ t.used
	t.used |= free.First()
	switch {
	case cl.Load:
		t.memOp = 1
	case cl.Store:
		t.memOp = 2
	}
	lat, cause := t.lat, t.latCause
	if cl.Unit != UnitNone {
		t.unitFree[cl.Unit] = at + uint64(cl.Busy)
	}
	if cl.Writes != 0 {
		reg := d.Rc
		if cl.Writes == 'a' {
			reg = d.Ra
		}
		f := b2i(cl.FPDst)
		t.ready[f][reg&63] = at + lat
		t.readyCause[f][reg&63] = cause
		t.readyPC[f][reg&63] = pc
	}
	var penalty uint64
	var ev EventSet
	switch {
	case cl.Branch:
		penalty, ev = t.Mem.Branch(pc, pc+4+uint64(d.Imm), next != pc+4)
	case d.Op == OpBR:
		if d.Ra != SinkReg {
			t.Mem.Call(pc + 4) // BSR
		}
	case cl.Jump:
		switch d.Imm >> 14 & 3 {
		case 0: // JMP
			penalty, ev = t.Mem.Jump(pc, uint16(d.Imm)&0x3fff, next)
		case 1: // JSR
			penalty, ev = t.Mem.Jump(pc, uint16(d.Imm)&0x3fff, next)
			t.Mem.Call(pc + 4)
		case 2: // RET
			penalty, ev = t.Mem.Return(next)
		default: // JSR_COROUTINE
			penalty, ev = t.Mem.Return(next)
			t.Mem.Call(pc + 4)
		}
	}
	if penalty > 0 {
		t.events |= ev
		t.fetchReady, t.fetchCause, t.fetchTLB = at+1+penalty, StallMispred, 0
	} else if t.fetchReady <= at {
		t.fetchReady, t.fetchCause, t.fetchTLB = 0, StallSlot, 0
	}
	t.last, t.lastBlock = at, pc>>IssueBlockShift
	t.palPC = 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
