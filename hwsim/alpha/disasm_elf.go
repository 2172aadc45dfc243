package alpha

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
)

// ErrDisasmNotAlpha is returned for an ELF file that is not 64-bit
// little-endian Alpha.
var ErrDisasmNotAlpha = errors.New("not an Alpha ELF64 file")

// DisasmOptions selects what DisassembleELF prints.
type DisasmOptions struct {
	// Sections to print, in file order; empty means every section with
	// instructions (SHF_EXECINSTR and contents), as objdump -d does.
	Sections []string
	// NoSymbols prints as if the file had no symbol table: one label per
	// section and bare "0x..." branch targets.
	NoSymbols bool
	// PAL picks the PALcode-mode mnemonics (objdump -m alpha:evN).
	PAL DisasmPAL
}

// DisassembleText prints the .text section of f as alpha-linux-gnu-objdump
// -d -j .text prints it, from its "Disassembly of section .text:" line on:
// a label line at every symbol ("0000000120000150 <main>:"), one line per
// instruction ("   120000150:\t00 00 fe 2f \tunop\t"), and "\t..." for runs
// of zero bytes.
func DisassembleText(w io.Writer, f *elf.File) error {
	return DisassembleELF(w, f, DisasmOptions{Sections: []string{".text"}})
}

// DisassembleELF prints the sections opt selects as objdump -d does (see
// DisassembleText). The file-format banner objdump prints first is the
// caller's, since only the caller knows the file name.
func DisassembleELF(w io.Writer, f *elf.File, opt DisasmOptions) error {
	secs, err := disSections(f, opt)
	if err != nil {
		return err
	}
	return disPrint(w, f, secs, opt)
}

// disSections checks f and picks the sections opt asks for.
func disSections(f *elf.File, opt DisasmOptions) ([]*elf.Section, error) {
	if err := disCheckAlpha(f); err != nil {
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

func disPrint(w io.Writer, f *elf.File, secs []*elf.Section, opt DisasmOptions) error {
	tab := &disSymtab{}
	if !opt.NoSymbols {
		var err error
		if tab, err = disReadSymtab(f); err != nil {
			return err
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, s := range secs {
		data, err := s.Data()
		if err != nil {
			return fmt.Errorf("read section %s: %w", s.Name, err)
		}
		sec := disSection{name: s.Name, index: disSecIndex(f, s), vma: s.Addr, data: data}
		fmt.Fprintf(bw, "\nDisassembly of section %s:\n", s.Name)
		tab.printSection(bw, &sec, opt.PAL)
	}
	return bw.Flush()
}

// DisassembleFile prints what objdump -d prints for the ELF file r, from
// the file-format banner on; name is the file name the banner and errors
// give. A file that is not ELF, not Alpha or malformed gets an error, never
// a panic.
func DisassembleFile(w io.Writer, r io.ReaderAt, name string, opt DisasmOptions) (err error) {
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
	secs, err := disSections(f, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, err := io.WriteString(w, DisasmFileHeader(name)); err != nil {
		return err
	}
	if err := disPrint(w, f, secs, opt); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func disCheckAlpha(f *elf.File) error {
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Machine != elf.EM_ALPHA {
		return fmt.Errorf("%w (class %v, data %v, machine %v)", ErrDisasmNotAlpha, f.Class, f.Data, f.Machine)
	}
	return nil
}

func disSecIndex(f *elf.File, s *elf.Section) int {
	for i, t := range f.Sections {
		if t == s {
			return i
		}
	}
	return -1
}

// disSection is the section being disassembled.
type disSection struct {
	name  string
	index int // section header index
	vma   uint64
	data  []byte
}

// DisasmFileHeader returns the banner objdump -d prints before the first
// section of a file: a blank line, "NAME:     file format elf64-alpha" and
// another blank line.
func DisasmFileHeader(name string) string {
	return "\n" + name + ":     file format elf64-alpha\n\n"
}
