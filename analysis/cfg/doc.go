// Package cfg owns the control-flow graph of each procedure of an Alpha
// image: basic blocks, the edges between them, call sites, indirect jumps
// and how far they were resolved. It is the program-structure layer between
// the ISA (hwsim/alpha decodes the words, hwsim/elfimage supplies segments
// and symbols) and the analyses that reason about paths and frequencies:
// dcpicalc's frequency-equivalence classes and propagation (DCPI paper,
// sec. 6.1.1), path numbering, path reconstruction, instrumentation.
//
// Code prepares an image once (the procedures its symbols define, the
// global pointer, the alternate entry points other code branches to);
// Code.Build and its lookups return a Proc per procedure. A Proc is a plain
// graph: real blocks in address order numbered 0..n-1, then two virtual
// nodes, Entry (n) and Exit (n+1), and edges between node numbers. The
// rules it follows:
//
//   - Calls (bsr, jsr) are ordinary instructions inside a block, as in the
//     paper; Options.SplitAtCalls ends a block after each call instead.
//     Code after a call that never returns (exit, abort) keeps its
//     fall-through: a call's return cannot be known statically.
//   - ret, and the PAL returns rti and retsys, are Return edges to Exit;
//     halt and undecodable words are Halt edges to Exit.
//   - A branch or a resolved jmp out of the procedure is an edge to Exit:
//     TailCall if it lands on a procedure's entry, Outside otherwise. A
//     jmp through pv (r27), the calling convention's callee register, is
//     a tail call even when its target is unknown. Code that runs off the
//     procedure's end is a FallOut edge to Exit.
//   - br to the next instruction (the "get the PC" idiom) does not end a
//     block: control goes on as if it were not there.
//   - jmp through gcc's jump tables (a bounds check, s4addq/s8addq, a
//     load of the entry, the gp or nothing added) is resolved from the
//     table in the image, bounded by the check; every other jmp is left
//     without successors and sets MissingEdges, with a note on the Jump.
//   - An infinite loop keeps no path to Exit: nothing is invented for it
//     (Block.ReachesExit says which blocks lack one).
//
// The package is pure: it reads an elfimage.Image and returns values; it
// holds no state between calls except Code's read-only tables, so a Code
// is safe for concurrent use.
package cfg
