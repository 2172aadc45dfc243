package ev6

import (
	"errors"
	"fmt"
)

// Sources, as cited in the comments below and in docs/timing-21264.md:
//
//	HRM     Alpha 21264/EV67 Microprocessor Hardware Reference Manual
//	        (Compaq, 2000): §2.1 microarchitecture, §2.2 pipeline and
//	        Table 2-1 (abort penalties), §2.3 Table 2-4 (latencies), §5.2.7
//	        (EXC_ADDR).
//	Kessler R. E. Kessler, "The Alpha 21264 Microprocessor", IEEE Micro
//	        19(2), 1999.
//	DS-10L  an assumption for the Bcache and memory of a Compaq DS-10L-class
//	        system, which the HRM leaves to the system; named as such.

// Params is every number of the model, one field each, with its source.
type Params struct {
	// Front end.
	FetchWidth      int // instructions fetched a cycle (HRM §2.1; Kessler): 4
	FetchBlockBytes int // aligned fetch block (HRM §5.2 I_STAT[ICM]: "aligned 4-instruction Icache fetch block"): 16
	FetchBuffer     int // instructions between fetch and map, stages 1-2 (HRM §2.2: two stages of 4): 8
	LineEntries     int // line predictor entries, one per I-cache fetch block (Kessler: a next-line prediction per fetch block of the 64 KB I-cache): 4096
	LineMissCycles  int // fetch bubble when the line/way predictor is wrong and the branch predictor right (assumption: one cycle, the slot-stage redirect)
	FetchToMap      int // fetch (stage 0) to map (stage 2) (HRM §2.2): 2
	MapToIssue      int // map (stage 2) to the earliest issue (stage 3) (HRM §2.2): 1
	MapWidth        int // instructions mapped a cycle (HRM §2.1; Kessler): 4
	RetireAfter     int // from the result cycle to retire (HRM §2.2: results written in stage 6, retire after; assumption: 3 cycles after a 1-cycle op issues its result)
	RetireWidth     int // instructions retired a cycle (Kessler: up to 11): 11

	// Tournament branch predictor (HRM §2.1; Kessler).
	LocalHistories   int // local history table entries: 1024
	LocalHistoryBits int // bits of local history: 10
	LocalCounterBits int // local prediction counters (1024 of them): 3
	GlobalEntries    int // global predictor 2-bit counters: 4096
	ChoiceEntries    int // choice predictor 2-bit counters: 4096
	PathHistoryBits  int // global path history, the index of both: 12
	ReturnStack      int // return address stack entries (assumption: HRM §2.1 gives the 21264A's; not checked): 32

	// Abort penalties (HRM Table 2-1), measured from the cycle after the
	// triggering instruction's fetch to the new target's fetch, with no
	// stall of the triggering instruction.
	MispredictCycles    int // conditional branch: 7
	JSRMispredictCycles int // JMP/JSR/RET (memory-format jumps): 8

	// Out-of-order resources.
	InFlight   int // instructions in flight, fetch to retire (HRM §2.1; Kessler): 80
	IntPhys    int // integer physical registers (HRM §2.1): 80
	FPPhys     int // FP physical registers (HRM §2.1): 72
	IntQueue   int // integer issue queue entries (HRM §2.1.1.6): 20
	FPQueue    int // FP issue queue entries (HRM §2.1.1.7): 15
	LoadQueue  int // load queue entries (Kessler): 32
	StoreQueue int // store queue entries (Kessler): 32
	// CrossCluster is the extra cycle an Ebox result takes to reach the
	// other cluster's register file copy (HRM Table 2-4, "possible 1-cycle
	// Ebox cross-cluster delay"; Kessler): 1.
	CrossCluster int
	MAF          int // miss address file: outstanding D-cache misses (HRM §2, "MAF and load-merging rules"): 8

	// Latencies (HRM Table 2-4).
	LatIntALU  int // iadd, ilog, ishf: 1
	LatCmov    int // cmov1 + cmov2, each 1: 2
	LatIMul    int // imul: 7
	LatIMisc   int // imisc (ctpop, ctlz, cttz, MVI): 3
	LatLoad    int // ild, D-cache hit: 3
	LatFPLoad  int // fld, D-cache hit: 4
	LatBranch  int // ubr, jsr (link register): 3
	LatFP      int // fadd, fmul, fcmov: 4
	LatFDivS   int // fdivs: 12
	LatFDivT   int // fdivt: 15
	LatFSqrtS  int // fsqrts: 18
	LatFSqrtT  int // fsqrtt: 33
	LatITOF    int // itof: 4
	LatFTOI    int // ftoi: 3
	LatRPCC    int // rpcc: 1
	LatForward int // a load served from the store queue: as a D-cache hit (assumption): 3

	// Caches (HRM §2.1; Kessler): 64 KB, 2-way, 64-byte lines.
	ICacheBytes, DCacheBytes, CacheWays, LineBytes int
	// L2Bytes is the Bcache: 2 MB direct-mapped (DS-10L assumption).
	L2Bytes int
	// L2LoadCycles is a load's latency when it misses the D-cache and hits
	// the Bcache: 13 (HRM Table 2-4, with a 6-cycle Bcache; DS-10L
	// assumption that its Bcache is the 6-cycle one).
	L2LoadCycles int
	// MemoryCycles is what a Bcache miss adds: 70 cycles, about 150 ns at
	// 466 MHz (DS-10L assumption: no source found for the machine).
	MemoryCycles int
	// Memory ordering (HRM §2): the store-wait table, one bit per load
	// PC, set when the load takes an order trap (it issued before an
	// older store to its address) and cleared every StoreWaitClear
	// cycles; a load whose bit is set waits for every older store to
	// issue. Entries and interval: 1024 and 16384 (assumption: the
	// figures as recalled from the HRM, not checked against a source
	// here). OrderTrapCycles is the Mbox order trap's abort penalty (HRM
	// Table 2-1): 14.
	StoreWaitEntries, StoreWaitClear int
	OrderTrapCycles                  int
	// TLBs (HRM §2.1): ITB and DTB, 128 entries each, fully associative,
	// ASN-tagged; replacement is the 21164 model's not-last-used
	// (assumption). A miss traps to PALcode: the abort penalty (HRM Table
	// 2-1: ITB 7, DTB 13), then the handler, TLBFillCycles (assumption:
	// 13, one Bcache access for the PTE; the handler's other instructions
	// overlap it).
	ITBEntries, DTBEntries       int
	ITBMissCycles, DTBMissCycles int
	TLBFillCycles                int
	// Load hit speculation (HRM §2.7.1): the issue queue issues a load's
	// consumers as if it hit, LatLoad cycles after it. In the
	// LoadSpecWindow cycles from then (2) the hit is not yet known: every
	// IQ-issued instruction issued in them, dependent or not, is aborted
	// if the load missed and issues again after the window. An FP load's
	// window is FPLoadSpecWindow (1) cycle, LatFPLoad after it, and aborts
	// only the FQ-issued instructions that use its data. A saturating
	// counter of LoadUseCounterBits (4) goes up by LoadUseHitInc (1) when
	// a load hits and down by LoadUseMissDec (2) when it misses; while
	// its upper bit is 0 an integer load's latency is LatLoadNoSpec (5)
	// and it opens no window. LoadUseCounterInit is the counter's value
	// at reset (assumption: the HRM gives none; 15, speculating).
	LoadSpecWindow, FPLoadSpecWindow int
	LoadUseCounterBits               int
	LoadUseHitInc, LoadUseMissDec    int
	LoadUseCounterInit               int
	LatLoadNoSpec                    int
	// VictimBuffer is the entries of the D-cache victim buffer (HRM §2.1,
	// WAVE2-SPECS appendix): 8. Listed, not modelled: evictions go to the Bcache model
	// at once.
	VictimBuffer int
}

// DefaultParams returns the 21264 as published, and a DS-10L-class memory.
func DefaultParams() Params {
	return Params{
		FetchWidth: 4, FetchBlockBytes: 16, FetchBuffer: 8, LineEntries: 4096, LineMissCycles: 1,
		FetchToMap: 2, MapToIssue: 1, MapWidth: 4, RetireAfter: 3, RetireWidth: 11,
		LocalHistories: 1024, LocalHistoryBits: 10, LocalCounterBits: 3,
		GlobalEntries: 4096, ChoiceEntries: 4096, PathHistoryBits: 12, ReturnStack: 32,
		MispredictCycles: 7, JSRMispredictCycles: 8,
		InFlight: 80, IntPhys: 80, FPPhys: 72, IntQueue: 20, FPQueue: 15,
		LoadQueue: 32, StoreQueue: 32, CrossCluster: 1, MAF: 8,
		LatIntALU: 1, LatCmov: 2, LatIMul: 7, LatIMisc: 3, LatLoad: 3, LatFPLoad: 4,
		LatBranch: 3, LatFP: 4, LatFDivS: 12, LatFDivT: 15, LatFSqrtS: 18, LatFSqrtT: 33,
		LatITOF: 4, LatFTOI: 3, LatRPCC: 1, LatForward: 3,
		ICacheBytes: 64 << 10, DCacheBytes: 64 << 10, CacheWays: 2, LineBytes: 64,
		L2Bytes: 2 << 20, L2LoadCycles: 13, MemoryCycles: 70, VictimBuffer: 8,
		StoreWaitEntries: 1024, StoreWaitClear: 16384, OrderTrapCycles: 14,
		ITBEntries: 128, DTBEntries: 128, ITBMissCycles: 7, DTBMissCycles: 13, TLBFillCycles: 13,
		LoadSpecWindow: 2, FPLoadSpecWindow: 1, LoadUseCounterBits: 4, LoadUseHitInc: 1, LoadUseMissDec: 2,
		LoadUseCounterInit: 15, LatLoadNoSpec: 5,
	}
}

// ErrInvalidParams is wrapped by every parameter error.
var ErrInvalidParams = errors.New("ev6: invalid parameters")

// archRegs is how many physical registers of each file hold architectural
// state and are never free for renaming: 31 (R31/F31 are not mapped), and
// for the integer file the 8 PALshadow registers (HRM §2.1: 80 = 31 +
// 8 + 41; 72 = 31 + 41).
const (
	intArch = 31 + 8
	fpArch  = 31
)

// Validate reports the first parameter that cannot work.
func (p Params) Validate() error {
	pos := []struct {
		name string
		v    int
	}{
		{"fetch width", p.FetchWidth}, {"fetch block", p.FetchBlockBytes}, {"fetch buffer", p.FetchBuffer},
		{"line predictor", p.LineEntries}, {"map width", p.MapWidth}, {"retire width", p.RetireWidth},
		{"local histories", p.LocalHistories}, {"local history bits", p.LocalHistoryBits},
		{"local counter bits", p.LocalCounterBits}, {"global entries", p.GlobalEntries},
		{"choice entries", p.ChoiceEntries}, {"path history bits", p.PathHistoryBits},
		{"return stack", p.ReturnStack}, {"in flight", p.InFlight}, {"integer queue", p.IntQueue},
		{"FP queue", p.FPQueue}, {"load queue", p.LoadQueue}, {"store queue", p.StoreQueue},
		{"MAF", p.MAF}, {"cache ways", p.CacheWays}, {"line bytes", p.LineBytes},
		{"I-cache", p.ICacheBytes}, {"D-cache", p.DCacheBytes}, {"L2", p.L2Bytes},
		{"load latency", p.LatLoad}, {"FP load latency", p.LatFPLoad},
		{"store-wait entries", p.StoreWaitEntries}, {"store-wait clear interval", p.StoreWaitClear},
		{"order trap penalty", p.OrderTrapCycles}, {"ITB entries", p.ITBEntries}, {"DTB entries", p.DTBEntries},
		{"ITB miss penalty", p.ITBMissCycles}, {"DTB miss penalty", p.DTBMissCycles}, {"TLB fill", p.TLBFillCycles},
	}
	for _, f := range pos {
		if f.v <= 0 {
			return fmt.Errorf("%w: %s %d: want > 0", ErrInvalidParams, f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"line predictor", p.LineEntries}, {"local histories", p.LocalHistories},
		{"global entries", p.GlobalEntries}, {"choice entries", p.ChoiceEntries},
		{"fetch block", p.FetchBlockBytes}, {"line bytes", p.LineBytes},
		{"store-wait entries", p.StoreWaitEntries}} {
		if f.v&(f.v-1) != 0 {
			return fmt.Errorf("%w: %s %d: want a power of two", ErrInvalidParams, f.name, f.v)
		}
	}
	switch {
	case p.LocalHistoryBits > 16 || p.PathHistoryBits > 16 || p.LocalCounterBits > 7:
		return fmt.Errorf("%w: predictor widths %d/%d/%d too large", ErrInvalidParams,
			p.LocalHistoryBits, p.PathHistoryBits, p.LocalCounterBits)
	case p.IntPhys <= intArch || p.FPPhys <= fpArch:
		return fmt.Errorf("%w: %d integer and %d FP physical registers leave none for renaming",
			ErrInvalidParams, p.IntPhys, p.FPPhys)
	case p.FetchBlockBytes/4 < p.FetchWidth:
		return fmt.Errorf("%w: fetch block of %d bytes holds fewer than %d instructions",
			ErrInvalidParams, p.FetchBlockBytes, p.FetchWidth)
	case p.LoadSpecWindow < 0 || p.FPLoadSpecWindow < 0 || p.LoadUseHitInc < 0 || p.LoadUseMissDec < 0:
		return fmt.Errorf("%w: load hit speculation's windows %d/%d and steps %d/%d: want >= 0", ErrInvalidParams,
			p.LoadSpecWindow, p.FPLoadSpecWindow, p.LoadUseHitInc, p.LoadUseMissDec)
	case p.LoadUseCounterBits < 1 || p.LoadUseCounterBits > 8:
		return fmt.Errorf("%w: load-use counter of %d bits: want 1-8", ErrInvalidParams, p.LoadUseCounterBits)
	case p.LoadUseCounterInit < 0 || p.LoadUseCounterInit >= 1<<p.LoadUseCounterBits:
		return fmt.Errorf("%w: load-use counter starting at %d does not fit %d bits", ErrInvalidParams,
			p.LoadUseCounterInit, p.LoadUseCounterBits)
	case p.LatLoadNoSpec < p.LatLoad:
		return fmt.Errorf("%w: unspeculated load latency %d below the hit latency %d", ErrInvalidParams,
			p.LatLoadNoSpec, p.LatLoad)
	case p.MispredictCycles+1 < p.FetchToMap+p.MapToIssue || p.JSRMispredictCycles+1 < p.FetchToMap+p.MapToIssue:
		return fmt.Errorf("%w: mispredict penalty shorter than the pipeline to issue", ErrInvalidParams)
	}
	return nil
}
