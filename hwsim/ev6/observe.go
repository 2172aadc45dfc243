package ev6

import "dcpi/hwsim/alpha"

// Record is one instruction's passage through the core, retired or
// aborted: what ProfileMe samples (its paper's §4: the PC, whether it
// retired, the events, and the latencies between stages). Cycles of stages
// an aborted instruction did not reach are zero.
type Record struct {
	PC                        uint64
	Fetch, Map, Issue, Retire uint64 // Retire: for an aborted instruction, the squash
	Retired                   bool
	Mapped, Issued            bool // an aborted one may stop before either
	Events                    alpha.EventSet
	Mispredicted              bool // a branch or jump whose successor was mispredicted

	// What ProfileMe's profile registers take besides (its paper's §4.1.3
	// and Table 1). Ready is the cycle its operands were ready (Table 1's
	// "data ready": from it the instruction waits only for a pipe);
	// RetReady the cycle it could retire but for older instructions; Done
	// the cycle its result was ready (a load's data returned; for an
	// aborted instruction, its squash). Zero for stages an aborted
	// instruction did not reach.
	Ready, RetReady, Done uint64
	// Addr is a load's or store's effective address, or a jump's target.
	Addr uint64
	// Load marks a load (not a prefetch); Taken a branch or jump that
	// transferred control — on the wrong path, that the front end
	// followed it taken.
	Load, Taken bool
	// History is the directions of the last 16 conditional branches
	// fetched before the instruction on its path, newest in bit 0, 1 =
	// taken: the global history as the front end shifts it in at fetch.
	// After a mispredict it is repaired to the branch's outcome, as the
	// predictor's global history is, so the correct path never holds a
	// wrong-path branch; a wrong-path instruction's history holds the
	// mispredicted branch's predicted direction and the wrong-path
	// branches fetched before it.
	History uint16
}

// Observer, when set, receives every instruction the core times, in
// fetch order: a mispredicted branch, then the wrong-path instructions it
// fetched, then its successors. Nil costs one check per instruction. It
// is the hook for ProfileMe's sampling on this core; nothing else may
// depend on the order of aborted and retired records beyond that.
func (c *Core) SetObserver(f func(Record)) { c.observe = f }
