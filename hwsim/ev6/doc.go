// Package ev6 is the timing model of the Alpha 21264 (EV6, and the EV67,
// whose core timing is the same here): an out-of-order core behind the
// alpha.Core interface, selected with `--model ev6` (or ev67) and timing
// on. It owns the 21264's pipeline — fetch along the predicted path with
// line prediction, the tournament branch predictor, register renaming,
// the integer and floating-point issue queues, the two integer clusters,
// the in-flight window, the load and store queues with store-to-load
// forwarding, the store-wait table and its order traps, in-order retire —
// and its caches and TLBs (a miss traps to a PALcode fill and refetches). The 21164's timing
// (package alpha's issue model over package timing) is untouched by it.
//
// The model is one pass, in program order: the interpreter executes each
// instruction on the correct path and the core computes, from the older
// instructions' already decided cycles, when it is fetched, mapped,
// issued and retired. Older instructions have priority for every resource,
// as the 21264's age-ordered issue arbiters give them (HRM §2.1.1.6), so
// no younger instruction can change an older one's cycles and one pass is
// exact for what is modelled. Wrong-path instructions are decoded from
// memory along the predicted path after a mispredicted branch and timed
// without architectural effect until the branch resolves (wrongpath.go).
// docs/timing-21264.md describes the model, its parameters with their sources, and
// what it does not model yet.
package ev6
