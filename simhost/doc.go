// Package simhost runs a simulated host profiled by DCPI: an hwsim.Machine
// with node's driver and daemon on it. It owns what belongs to the
// simulation rather than to the profiler: the run loop (the machine in
// chunks, periodic full drains, stopping), keeping programs running, the
// machine's images and vmunix (parsed with elfimage for the daemon's image
// records, and their .eh_frame compiled into unwind tables for the stack
// walk), the adapter through which a node sees the machine (node.Host),
// recording sample traces, the local Pebble sink for profiling with no
// cluster, and where a restarted host's batch streams resume after a
// crash (Resume, a pure function over what the stream and the database
// hold).
//
// The split keeps node free of the simulator: node declares the Host it
// runs on and the ImageSource that describes images, and this package
// implements both.
package simhost
