// Package elfimage turns the bytes of a static ELF64 Alpha executable into an
// Image: the loadable segments, entry point and program-header facts the
// simulator's loader needs, the content identity (build ID or SHA-256) and
// symbols the profiler's daemon and analysis tools attribute samples with, and
// the .text bounds a disassembler walks. objdump's choice of the symbol that
// names an address (ObjdumpSymbols) is here too, the one implementation
// both SymbolFor and the disassembler (hwsim/alpha/disasm) use. It also builds the initial process
// stack (argc, argv, envp, auxv) that Linux/Alpha gives a new program, and
// decodes the .eh_frame call frame information (FrameInfo) a stack
// unwinder needs.
//
// It owns only the decoding of outside input into plain values: it is pure,
// holds no simulator state and does no I/O (callers read the file). It does
// not map memory, run code, resolve dynamic linking (dynamically linked
// executables are rejected), read DWARF beyond .eh_frame's call frame
// information, or disassemble instructions.
//
// Every malformed input gets an error naming the problem and wrapping one of
// ErrNotELF, ErrUnsupported or ErrMalformed; Parse never panics.
package elfimage
