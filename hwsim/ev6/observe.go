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
}

// Observer, when set, receives every instruction the core times, in
// fetch order: a mispredicted branch, then the wrong-path instructions it
// fetched, then its successors. Nil costs one check per instruction. It
// is the hook for ProfileMe's sampling on this core; nothing else may
// depend on the order of aborted and retired records beyond that.
func (c *Core) SetObserver(f func(Record)) { c.observe = f }
