// Package node is the per-host agent: DCPI's driver (per-CPU aggregation
// tables, overflow buffer pairs, the IPI flush protocol; driver.go,
// table.go, overflow.go, driver_flush.go) and daemon (image maps by
// process incarnation, attribution of samples to images, the bookkeeping
// of batches and epochs as a plain value, Ledger, and the goroutine that
// drains the drivers by IPI and publishes; node.go), sampled call stacks
// (a per-CPU stack table beside the flat one, stack.go, walked with
// package node/unwind over per-process unwind spaces, stackspaces.go, and
// attributed frame by frame, attribute_stacks.go), following the
// coordinator's epochs (Follow), and sec. 5.4's trace-driven table
// simulator (Simulate, over the sample trace format of trace.go).
//
// The agent sees the machine it profiles only through interfaces it
// declares: Host (CPUs, a counter interrupt handler, IPIs, the time,
// loader events), ImageSource (what an image record says of a file, and
// as an UnwindSource its unwind table) and Publisher (where batches and
// records go). Package simhost implements
// them for a simulated hwsim machine; a replayed trace is another Host.
// So node imports neither the simulator nor elfimage nor storage.
package node
