// Package oracle owns the simulator's ground truth of paths and calling
// contexts: it watches hwsim's transfer observer and process events, keeps
// a shadow stack of activations per process, infers the fall-through
// edges between observed transfers from the block layout (analysis/cfg),
// follows the Ball-Larus actions (analysis/paths) to name every executed
// path, and builds the calling context tree (analysis/cct) with calls,
// instructions and cycles per context.
//
// It is ground truth for tests and for comparing an instrumented profile
// against: nothing here measures anything the way an instrumenter or a
// sampler would, and its figures are never to be presented as such.
//
// Decisions (docs/paths.md, "The oracle"):
//   - Kernel time is not the process's: cycles between a kernel entry and
//     the resume are charged to no context (the CPU may run other
//     processes meanwhile) and only counted (KernelEntries).
//   - A straight-line segment's cycles are charged when the segment ends
//     (at the next transfer or kernel entry); instructions are counted
//     from addresses and are exact per path.
//   - Paths still open when a process exits, execs or unwinds several
//     frames at once have no Ball-Larus ID (they never reached Exit or a
//     backedge): they are not counted as paths but kept as Partials with
//     the blocks they ran, so block counts still add up. After a longjmp
//     lands mid-procedure the frame walks without a path register until
//     its next backedge; that stretch is a Partial too.
//   - Cycles and I-/D-cache misses (hwsim.Transfer's PMU totals) are
//     charged per straight-line segment to the top activation.
//   - Activations of procedures that cannot be numbered (an unresolved
//     jmp, more than 2^63 paths) or entered where no entry edge leads are
//     counted by procedure as Unknown activations with their
//     instructions, never silently dropped.
package oracle
