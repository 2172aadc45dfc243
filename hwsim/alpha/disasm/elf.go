package disasm

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"

	"dcpi/hwsim/elfimage"
)

// ErrNotAlpha is returned for an ELF file that is not 64-bit
// little-endian Alpha.
var ErrNotAlpha = errors.New("not an Alpha ELF64 file")

// Options selects what ELF and File print.
type Options struct {
	// Sections to print, in file order; empty means every section with
	// instructions (SHF_EXECINSTR and contents), as objdump -d does.
	Sections []string
	// NoSymbols prints as if the file had no symbol table: one label per
	// section and bare "0x..." branch targets.
	NoSymbols bool
	// PAL picks the PALcode-mode mnemonics (objdump -m alpha:evN).
	PAL PAL
}

// Text prints the .text section of f as alpha-linux-gnu-objdump
// -d -j .text prints it, from its "Disassembly of section .text:" line on:
// a label line at every symbol ("0000000120000150 <main>:"), one line per
// instruction ("   120000150:\t00 00 fe 2f \tunop\t"), and "\t..." for runs
// of zero bytes.
func Text(w io.Writer, f *elf.File) error {
	return ELF(w, f, Options{Sections: []string{".text"}})
}

// ELF prints the sections opt selects as objdump -d does (see
// Text). The file-format banner objdump prints first is the
// caller's, since only the caller knows the file name.
func ELF(w io.Writer, f *elf.File, opt Options) error {
	secs, err := pickSections(f, opt)
	if err != nil {
		return err
	}
	return printSections(w, f, secs, opt)
}

// pickSections checks f and picks the sections opt asks for.
func pickSections(f *elf.File, opt Options) ([]*elf.Section, error) {
	if err := checkAlpha(f); err != nil {
		return nil, err
	}
	var secs []*elf.Section
	if len(opt.Sections) == 0 {
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_EXECINSTR != 0 && s.Type != elf.SHT_NOBITS && s.Size > 0 {
				secs = append(secs, s)
			}
		}
		return secs, nil
	}
	want := map[string]bool{}
	for _, n := range opt.Sections {
		want[n] = true
	}
	for _, s := range f.Sections {
		if want[s.Name] {
			delete(want, s.Name)
			if s.Type != elf.SHT_NOBITS && s.Size > 0 {
				secs = append(secs, s)
			}
		}
	}
	for _, n := range opt.Sections {
		if want[n] {
			return nil, fmt.Errorf("section %q not found", n)
		}
	}
	return secs, nil
}

func printSections(w io.Writer, f *elf.File, secs []*elf.Section, opt Options) error {
	tab := &elfimage.ObjdumpSymbols{}
	if !opt.NoSymbols {
		var err error
		if tab, err = readSymtab(f); err != nil {
			return err
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, s := range secs {
		data, err := s.Data()
		if err != nil {
			return fmt.Errorf("read section %s: %w", s.Name, err)
		}
		sec := section{name: s.Name, vma: s.Addr, data: data,
			objdump: elfimage.ObjdumpSection{Index: secIndex(f, s), Addr: s.Addr, Size: uint64(len(data))}}
		fmt.Fprintf(bw, "\nDisassembly of section %s:\n", s.Name)
		printSection(bw, tab, &sec, opt.PAL)
	}
	return bw.Flush()
}

// File prints what objdump -d prints for the ELF file r, from
// the file-format banner on; name is the file name the banner and errors
// give. A file that is not ELF, not Alpha or malformed gets an error, never
// a panic.
func File(w io.Writer, r io.ReaderAt, name string, opt Options) (err error) {
	// debug/elf is meant to return errors for malformed input; this guard
	// keeps a file it still trips over from taking the process down.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: malformed ELF file (%v)", name, p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("%s: not an ELF file: %w", name, err)
	}
	secs, err := pickSections(f, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, err := io.WriteString(w, FileHeader(name)); err != nil {
		return err
	}
	if err := printSections(w, f, secs, opt); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func checkAlpha(f *elf.File) error {
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Machine != elf.EM_ALPHA {
		return fmt.Errorf("%w (class %v, data %v, machine %v)", ErrNotAlpha, f.Class, f.Data, f.Machine)
	}
	return nil
}

func secIndex(f *elf.File, s *elf.Section) int {
	for i, t := range f.Sections {
		if t == s {
			return i
		}
	}
	return -1
}

// section is the section being disassembled.
type section struct {
	name string
	// objdump is the section as the symbol chooser sees it.
	objdump elfimage.ObjdumpSection
	vma     uint64
	data    []byte
}

// FileHeader returns the banner objdump -d prints before the first
// section of a file: a blank line, "NAME:     file format elf64-alpha" and
// another blank line.
func FileHeader(name string) string {
	return "\n" + name + ":     file format elf64-alpha\n\n"
}
