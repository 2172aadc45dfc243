package calc

import (
	"fmt"

	"dcpi/analysis/sched"
)

// Cause is a dynamic stall cause (Figure 4's dynamic rows).
type Cause uint8

// Dynamic causes, in Figure 4's order.
const (
	ICache      Cause = iota // I-cache miss, not an ITB miss
	ITB                      // ITB miss (and the I-cache miss after it)
	DCache                   // waiting for a load that missed the D-cache
	DTB                      // DTB miss
	WriteBuffer              // write buffer full
	Sync                     // memory barrier draining stores and fills
	Mispredict               // branch, jump or return mispredicted
	IMULBusy                 // the integer multiplier busy (from before the block)
	FDIVBusy                 // the FP divider busy (from before the block)
	Other
	NumCauses
)

var causeNames = [NumCauses]string{"I-cache (not ITB)", "ITB/I-cache miss", "D-cache miss", "DTB miss",
	"Write buffer", "Synchronization", "Branch mispredict", "IMUL busy", "FDIV busy", "Other"}

// Letters are Figure 2's bubble letters, by cause.
var causeLetters = [NumCauses]byte{'i', 'I', 'd', 'D', 'w', 'y', 'p', 'm', 'f', 'o'}

func (c Cause) String() string {
	if c < NumCauses {
		return causeNames[c]
	}
	return fmt.Sprintf("cause(%d)", uint8(c))
}

// Letter returns the cause's bubble letter in a listing.
func (c Cause) Letter() byte {
	if c < NumCauses {
		return causeLetters[c]
	}
	return '?'
}

// Candidate is one dynamic cause not ruled out for an instruction's stall.
type Candidate struct {
	Cause Cause
	// Culprit is the instruction that may be responsible (the load whose
	// value is awaited, the branch that may have been mispredicted, the
	// call whose callee may have left the value, unit or return late), or
	// 0 when it is the stalled instruction itself or lies in a caller.
	Culprit uint64
	// Bound is the most cycles per execution this cause can explain, as
	// far as the event samples tell; +Inf when they do not bound it.
	Bound float64
}

// InsnExplanation is dcpicalc's analysis of one instruction (a line of
// Figure 2).
type InsnExplanation struct {
	PC    uint64
	Word  uint32
	Block int
	// S is its CYCLES samples; M its static minimum head-of-queue cycles.
	S float64
	M int
	// F is its class's frequency (Known false: none could be estimated,
	// and CPI, Dynamic and Candidates are meaningless).
	F          float64
	Known      bool
	Confidence Confidence
	// CPI is S/F: the cycles it spends at the head of the issue queue per
	// execution.
	CPI float64
	// Static are the static stalls of its schedule.
	Static []sched.Stall
	// Dynamic is CPI - M: its dynamic stall cycles per execution
	// (negative: a gain, the schedule overestimated it).
	Dynamic float64
	// Candidates are the dynamic causes that survive every test, when
	// Dynamic > 0; none left means the stall is unexplained.
	Candidates []Candidate
}

// Range is a share of a procedure's cycles, as Figure 4's "x% to y%".
type Range struct{ Lo, Hi float64 }

// StaticCause is a static stall row of Figure 4.
type StaticCause uint8

// Static causes, in Figure 4's order.
const (
	Slotting StaticCause = iota
	RaDep
	RbDep
	RcDep
	FUDep
	NumStatic
)

var staticNames = [NumStatic]string{"Slotting", "Ra dependency", "Rb dependency", "Rc dependency", "FU dependency"}

func (c StaticCause) String() string {
	if c < NumStatic {
		return staticNames[c]
	}
	return fmt.Sprintf("static(%d)", uint8(c))
}

// Summary is Figure 4: where a procedure's cycles went. Cycle amounts are
// in samples (cycles / P); shares are fractions of Actual (0.279 prints as
// 27.9%).
type Summary struct {
	// Instructions is ΣF_i over the instructions with a known frequency
	// (Figure 4's 36016): the instructions executed, in units of P.
	Instructions float64
	// BestCase is ΣF_i·M_i and Actual ΣS_i over the same instructions
	// (14686 and 35171): best-case CPI is BestCase/Instructions, actual
	// CPI Actual/Instructions.
	BestCase, Actual float64
	// Dynamic[c] is the share of Actual cause c may account for, over the
	// instructions whose difference S_i − F_i·M_i is a stall beyond
	// sampling error (see NetSamplingError), D_i. With B_c the least of
	// D_i and F_i times the sum of cause c's candidate bounds: Hi sums
	// B_c, Lo sums what no other cause can take, max(0, min(B_c, D_i −
	// Σ_{c'≠c} B_c')) (all of it where c is the only candidate). For a
	// cause an event counts, the part of each sum from finite bounds is
	// capped by the procedure's event samples: their upper count × the
	// event's period × the most a miss costs, over P.
	Dynamic [NumCauses]Range
	// UnexplainedStall is the share of D_i the candidates' bounds cannot
	// cover, max(0, D_i − Σ_c B_c) (all of D_i with no candidate);
	// UnexplainedGain the (negative) sum of the differences that are
	// gains beyond sampling error. Lo = Hi for both.
	UnexplainedStall, UnexplainedGain Range
	// SubtotalDynamic is the net dynamic share: ΣD_i plus the gains.
	SubtotalDynamic float64
	// Static[c] is the share of static stall c, ΣF_i × the cycles of the
	// schedule's stalls of that reason (RcDep is always 0: hwsim's issue
	// model reads no Rc); SubtotalStatic their sum.
	Static         [NumStatic]float64
	SubtotalStatic float64
	// TotalStall is SubtotalDynamic + SubtotalStatic. Execution is the
	// issue cycles, ΣF_i·(M_i − its static stall cycles) (one cycle per
	// issue point that waited for nothing before it could issue; 0 for a
	// dual-issued or slotted instruction), so that Execution +
	// SubtotalStatic = BestCase/Actual. NetSamplingError is the sum of the
	// differences S_i − F_i·M_i within ExplainOptions.Margin standard
	// deviations of 0 (|S_i − F_i·M_i| ≤ Margin·√max(S_i, F_i·M_i, 1)),
	// which neither stall nor gain; it is computed as 1 − TotalStall −
	// Execution, so the three add up to 1 by construction. All shares
	// are 0 when Actual is 0.
	TotalStall, Execution, NetSamplingError float64
	// Trust is how far the rows above can be believed: the share at low
	// confidence and why, whether the culprit rows are withheld, and
	// what the frequencies came from.
	Trust Trust
	// AllSamples is the procedure's CYCLES samples, those of
	// instructions without a frequency estimate included: Actual /
	// AllSamples is the share tallied.
	AllSamples float64
}

// Explanation is dcpicalc's analysis of one procedure: every instruction
// in address order and the summary.
type Explanation struct {
	Proc    *Procedure
	Freq    *Frequencies
	Insns   []InsnExplanation
	Summary Summary
}
