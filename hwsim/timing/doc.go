// Package timing is the memory-system and branch-prediction timing of one
// simulated Alpha 21164: the I-cache, D-cache, S-cache and board cache, the
// ITB and DTB, the miss address file, the write buffer, the branch history
// table and the return stack. Given an address and the current cycle it
// answers how long an access takes and what happened (an I-cache miss, a DTB
// miss, a full write buffer...), so the interpreter can charge stalls, feed
// the performance counters and record ground truth.
//
// It does not own the issue and slotting model (which instructions issue
// together, register dependences, functional units) nor the interpreter:
// those live in hwsim/alpha, which calls Hierarchy once per fetch block,
// load, store and branch. Everything here is plain structs with methods:
// no goroutines, no I/O, no maps, and no allocation after construction, so
// the calls cost a few nanoseconds. It is deterministic: the only
// randomness, the S-cache's random replacement, comes from a generator
// seeded by Params.Seed.
//
// Multiprocessor coherence is out of scope: processes on the simulated
// machine do not share writable memory across CPUs, so each CPU's
// Hierarchy is modelled alone, with no invalidations from other CPUs.
// Dirty victims and the bandwidth of the board-cache and memory buses are
// not modelled either; each access costs a fixed latency for the level
// that hits. Params lists every number, where it came from, and which are
// assumptions.
package timing
