// Package linuxhost is a real Linux machine as a node.Host: DCPI's driver
// and daemon fed by perf_event_open instead of a simulated Alpha. One
// sampling event per CPU stands for DCPI's per-CPU counter, its mmap ring
// buffer for the overflow buffer the interrupt handler would fill, and the
// kernel's MMAP2, COMM, FORK and EXIT records for the loader hooks and exec
// recognizer (sec. 4.3.2). It owns opening the events, reading the rings,
// decoding their records (records.go, pure), process incarnations, the
// initial mappings from /proc, and describing native ELF images and the
// kernel for the daemon's image records. The node's aggregation, ledger
// and publishing are unchanged; running a command under it is the
// caller's (linuxrun).
package linuxhost
