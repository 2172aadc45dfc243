// Package node is the per-host agent: DCPI's driver (per-CPU aggregation
// tables, overflow buffer pairs, IPI-synchronized flushes) and daemon
// (image maps, attribution of samples to images, sample batches). It sees
// the simulated host only through hwsim's interrupt callback, IPIs and
// loader events.
//
// Status: the driver and daemon are issue 4; this package holds nothing yet.
package node
