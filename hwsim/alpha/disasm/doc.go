// Package disasm prints Alpha machine code as alpha-linux-gnu-objdump -d
// prints it (binutils 2.40), byte for byte: one instruction (Insn,
// AppendInsn, Machine for the PALcode-mode mnemonics of one chip), and whole
// ELF files in objdump's listing layout (File, ELF, Text) with labels,
// "<sym+off>" branch targets, "..." runs of zeros and data dumps.
//
// It owns objdump's instruction table (opcodes/alpha-opc.c: which mnemonic,
// pseudo-instruction and operand form a word prints as) and objdump's
// listing layout. Which symbol names an address is not its own: that is
// elfimage's objdump-compatible chooser (elfimage.ObjdumpSymbols), shared
// with the Image.SymbolFor the analysis tools print through. From package
// alpha it takes only the CPU models and their AMASK extensions, so that
// Machine.Lacks can tell which instructions a model cannot execute; the
// simulator's own decoder (alpha.Decode) is separate and does not print.
//
// The tests compare listings with objdump when alpha-linux-gnu-objdump is
// installed, and otherwise with the committed goldens under testdata.
package disasm
