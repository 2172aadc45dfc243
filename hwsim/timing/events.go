package timing

import "strings"

// Events is the set of things that happened in one call to a Hierarchy
// method, for the caller's performance counters and ground truth. The
// names follow the 21164's counter events (ALPHA-NOTES "Performance
// counters") where there is one.
type Events uint32

// The events.
const (
	EvIcacheMiss       Events = 1 << iota // ICACHE_MISSES: the fetch block missed the I-cache
	EvITBMiss                             // ITB_MISS
	EvDcacheMiss                          // DCACHE_MISSES: a load missed the D-cache (merged ones too)
	EvDTBMiss                             // DTB_MISS, for a load or a store
	EvScacheMiss                          // S-cache miss, of a fetch, a load or a store's write
	EvBcacheMiss                          // board-cache miss: the access went to memory
	EvLoadMerged                          // LOADS_MERGED: a D-cache miss joined an outstanding fill
	EvMAFFull                             // a load replayed on a full miss address file
	EvStoreMerged                         // a store merged into a write-buffer entry
	EvWBFull                              // a store replayed on a full write buffer
	EvBranchMispredict                    // BRANCH_MISPREDICTS: a conditional branch
	EvPCMispredict                        // PC_MISPR: a jump's or a return's target
	numEvents          = iota
)

var eventNames = [numEvents]string{
	"imiss", "itbmiss", "dmiss", "dtbmiss", "smiss", "bmiss",
	"loadmerged", "maffull", "storemerged", "wbfull", "branchmp", "pcmp",
}

// Has reports whether every event of x is in e.
func (e Events) Has(x Events) bool { return e&x == x }

func (e Events) String() string {
	if e == 0 {
		return "none"
	}
	var b strings.Builder
	for i, name := range eventNames {
		if e&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	return b.String()
}

// Stats is what a Hierarchy has seen since it was made.
type Stats struct {
	Fetches, IcacheMisses, ITBMisses uint64 // Fetch calls and their misses
	Loads, DcacheMisses, DTBMisses   uint64 // DTBMisses of loads and stores
	LoadsMerged, MAFFull             uint64
	Stores, StoresMerged, WBFull     uint64
	ScacheAccesses, ScacheMisses     uint64 // fetch and load fills, store writes
	BcacheAccesses, BcacheMisses     uint64
	Branches, BranchMispredicts      uint64 // conditional branches
	Jumps, JumpMispredicts           uint64 // JMP and JSR, predicted by hint
	Returns, ReturnMispredicts       uint64 // RET and JSR_COROUTINE, by the return stack
	Barriers                         uint64
	// StallCycles is the total of the stalls and penalties returned
	// (not load latencies).
	StallCycles uint64
}
