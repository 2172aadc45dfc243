// Package instrument owns dcpi's binary instrumenter for static Alpha ELF
// executables, an EEL-like rewriter after the PLDI'97 paper's tools: it
// reads an image with analysis/cfg, replaces chosen original instructions
// by a br to a stub in a new PT_LOAD segment (so every original PC, jump
// table, return address and symbol stays valid), and writes an ELF that
// runs on hwsim and qemu-alpha with the original's output while counting.
// It also owns the runtime those stubs call (written here in Alpha words by
// a small assembler: the exit-path dump, the fork and execve hooks), the
// manifest stored in the instrumented ELF, and the reader of the dump file.
//
// Mode pixie (DCPI's dcpix) counts every basic block's executions and both
// edges of every conditional branch and each jump-table transfer exactly.
// Mode paths counts Ball-Larus paths (the paper's sec. 2); mode cct builds
// the calling context tree at run time as the paper's call records (sec.
// 4; cctmode.go), which ReadCCT turns into an analysis/cct tree. With
// Options.Metrics either mode also accumulates cycles and two hwsim rdpic
// events per path or per context, each its own, callees excluded
// (metrics.go; the program then runs on hwsim only).
// InstrumentFile and WriteCounts (run.go) are dcpi pp instrument's and
// dcpi pp counts' runs over files: the command parses flags and calls one.
// docs/instrument.md describes the rewriting, register scavenging, the
// dump and manifest formats, and the limits.
package instrument
