package alpha

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
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

// Symbol flags, after BFD's: the ones objdump's symbol ordering looks at.
const (
	disSymLocal uint8 = 1 << iota
	disSymGlobal
	disSymFunction
	disSymObject
	disSymDebugging // file and section symbols
	disSymFile
)

// disSymAbs is the section index given to absolute symbols and symbols in
// sections BFD does not know; it sorts after every real section, as BFD's
// static *ABS* section sorts after the heap-allocated ones.
const disSymAbs = 1 << 30

// disSym is one symbol objdump keeps for disassembly.
type disSym struct {
	name  string
	value uint64
	sec   int // section header index, or disSymAbs
	flags uint8
	size  uint64
}

// disSymtab is objdump's sorted symbol table (objdump.c: sorted_syms).
type disSymtab struct {
	syms []disSym
	// hasReloc is BFD's HAS_RELOC (the file has relocation sections):
	// objdump then prefers symbols of the section being disassembled for
	// addresses inside it.
	hasReloc bool
}

// disReadSymtab reads the symbol table (the dynamic one if there is none)
// and keeps and orders the symbols as objdump does before disassembling.
func disReadSymtab(f *elf.File) (*disSymtab, error) {
	syms, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) || len(syms) == 0 {
		syms, err = f.DynamicSymbols()
		if errors.Is(err, elf.ErrNoSymbols) {
			syms, err = nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read symbols: %w", err)
	}
	t := &disSymtab{}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_RELA || s.Type == elf.SHT_REL {
			t.hasReloc = true
		}
	}
	rel := f.Type == elf.ET_REL
	for _, s := range syms {
		d := disSym{name: s.Name, value: s.Value, size: s.Size}
		switch s.Section {
		case elf.SHN_UNDEF, elf.SHN_COMMON:
			continue // objdump drops undefined and common symbols
		case elf.SHN_ABS:
			d.sec = disSymAbs
		default:
			d.sec = int(s.Section)
			if s.Section >= elf.SHN_LORESERVE || d.sec >= len(f.Sections) {
				d.sec = disSymAbs
			} else if rel {
				// A relocatable file's symbol values are section offsets.
				d.value += f.Sections[d.sec].Addr
			}
		}
		switch elf.ST_BIND(s.Info) {
		case elf.STB_LOCAL:
			d.flags |= disSymLocal
		case elf.STB_GLOBAL:
			d.flags |= disSymGlobal
		}
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FUNC:
			d.flags |= disSymFunction
		case elf.STT_OBJECT, elf.STT_COMMON:
			d.flags |= disSymObject
		case elf.STT_FILE:
			d.flags |= disSymFile | disSymDebugging
		case elf.STT_SECTION:
			// BFD names a section symbol after its section, and objdump
			// keeps only those of .plt, .got and .plt.got.
			d.flags |= disSymDebugging
			if d.name == "" && d.sec != disSymAbs {
				d.name = f.Sections[d.sec].Name
			}
			if d.name != ".plt" && d.name != ".got" && d.name != ".plt.got" {
				continue
			}
		}
		if d.name == "" || d.flags&disSymFile != 0 {
			continue
		}
		t.syms = append(t.syms, d)
	}
	sort.Slice(t.syms, func(i, j int) bool { return disCompareSyms(&t.syms[i], &t.syms[j]) < 0 })
	return t, nil
}

// disCompareSyms is objdump's compare_symbols: by value; then by section;
// then real names before gcc2_compiled-style markers and file names;
// functions, then globals, before the rest; larger sizes first; names
// starting with '.' last; then by name.
func disCompareSyms(a, b *disSym) int {
	switch {
	case a.value != b.value:
		return disCmp(a.value < b.value)
	case a.sec != b.sec:
		return disCmp(a.sec < b.sec)
	}
	if c := disCmpFlag(disCompiledMarker(a.name), disCompiledMarker(b.name)); c != 0 {
		return c
	}
	if c := disCmpFlag(disFileName(a), disFileName(b)); c != 0 {
		return c
	}
	if c := disCmpFlag(a.flags&disSymDebugging != 0, b.flags&disSymDebugging != 0); c != 0 {
		return c
	}
	if c := disCmpFlag(a.flags&disSymFunction == 0, b.flags&disSymFunction == 0); c != 0 {
		return c
	}
	if c := disCmpFlag(a.flags&disSymLocal != 0, b.flags&disSymLocal != 0); c != 0 {
		return c
	}
	if c := disCmpFlag(a.flags&disSymGlobal == 0, b.flags&disSymGlobal == 0); c != 0 {
		return c
	}
	if a.size != b.size {
		return disCmp(a.size > b.size)
	}
	if c := disCmpFlag(strings.HasPrefix(a.name, "."), strings.HasPrefix(b.name, ".")); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// disCmp returns -1 if less, else 1.
func disCmp(less bool) int {
	if less {
		return -1
	}
	return 1
}

// disCmpFlag orders false before true.
func disCmpFlag(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func disCompiledMarker(n string) bool {
	return strings.Contains(n, "gnu_compiled") || strings.Contains(n, "gcc2_compiled")
}

// disFileName is objdump's guess that a symbol names a file: a file symbol,
// or a name ending in ".o" or ".a".
func disFileName(s *disSym) bool {
	n := s.name
	return s.flags&disSymFile != 0 || len(n) >= 2 && n[len(n)-2] == '.' && (n[len(n)-1] == 'o' || n[len(n)-1] == 'a')
}

// symOK is objdump's sym_ok: with wantSection, the symbol must be in sec.
func (t *disSymtab) symOK(wantSection bool, i int, sec *disSection) bool {
	return !wantSection || t.syms[i].sec == sec.index
}

// find is objdump's find_symbol_for_address: the index of the symbol that
// names vma while disassembling sec, or -1. requireSec restricts the choice
// to symbols of sec.
func (t *disSymtab) find(vma uint64, sec *disSection, requireSec bool) int {
	n := len(t.syms)
	if n < 1 {
		return -1
	}
	lo, hi := 0, n
	for lo+1 < hi {
		mid := (lo + hi) / 2
		v := t.syms[mid].value
		if v > vma {
			hi = mid
		} else if v < vma {
			lo = mid
		} else {
			lo = mid
			break
		}
	}
	place := lo
	for place > 0 && t.syms[place].value == t.syms[place-1].value {
		place--
	}
	// Prefer a symbol of this section among those with the same value.
	lo = place
	for lo < hi && t.syms[lo].value == t.syms[place].value {
		if t.symOK(true, lo, sec) {
			return lo
		}
		lo++
	}
	want := requireSec || t.hasReloc && vma >= sec.vma && vma < sec.vma+uint64(len(sec.data))
	if !t.symOK(want, place, sec) {
		newPlace := n
		for i := lo - 1; i >= 0; i-- {
			if t.symOK(want, i, sec) {
				if newPlace == n {
					newPlace = i
				}
				if t.syms[i].value != t.syms[newPlace].value {
					break
				}
				newPlace = i
			}
		}
		if newPlace != n {
			place = newPlace
		} else {
			for i := place + 1; i < n; i++ {
				if t.symOK(want, i, sec) {
					place = i
					break
				}
			}
		}
		if !t.symOK(want, place, sec) {
			return -1
		}
	}
	return place
}

// disSecSymbolizer names branch targets while disassembling one section.
type disSecSymbolizer struct {
	t   *disSymtab
	sec *disSection
}

func (s disSecSymbolizer) SymbolFor(addr uint64) (string, uint64, bool) {
	if i := s.t.find(addr, s.sec, false); i >= 0 {
		return s.t.syms[i].name, addr - s.t.syms[i].value, true
	}
	// objdump falls back to the section being disassembled.
	return s.sec.name, addr - s.sec.vma, true
}

// printSection is objdump's disassemble_section: blocks of bytes between
// consecutive symbols, each under its label.
func (t *disSymtab) printSection(w *bufio.Writer, sec *disSection, pal DisasmPAL) {
	size := uint64(len(sec.data))
	var symz Symbolizer
	if len(t.syms) > 0 {
		symz = disSecSymbolizer{t, sec}
	}
	p := disPrinter{w: w, sec: sec, sym: symz, idx: disGetIndex(pal)}
	p.setAddrWidth()

	place := 0
	sym := t.find(sec.vma, sec, true)
	if sym >= 0 {
		place = sym
	}
	var line []byte
	for off := uint64(0); off < size; {
		addr := sec.vma + off
		// The label.
		line = append(line[:0], '\n')
		line = disAppendHex16(line, addr)
		line = append(line, " <"...)
		if sym >= 0 {
			line = disAppendSymOff(line, t.syms[sym].name, addr-t.syms[sym].value)
		} else {
			line = disAppendSymOff(line, sec.name, addr-sec.vma)
		}
		line = append(line, ">:\n"...)
		w.Write(line)

		next := -1
		switch {
		case sym >= 0 && t.syms[sym].value > addr:
			next = sym
		case sym >= 0:
			for place < len(t.syms) && !t.validNext(place, sym, sec) {
				place++
			}
			if place < len(t.syms) {
				next = place
			}
		}
		stop := size
		switch {
		case sym >= 0 && t.syms[sym].value > addr:
			stop = t.syms[sym].value - sec.vma
		case next >= 0:
			stop = t.syms[next].value - sec.vma
		}
		if stop > size || stop <= off {
			stop = size
		}
		// A symbol marked as an object (and not a function) is dumped as
		// data.
		insns := sym < 0 || t.syms[sym].sec != sec.index || t.syms[sym].value > addr ||
			t.syms[sym].flags&disSymObject == 0 && !disCompiledMarker(t.syms[sym].name) ||
			t.syms[sym].flags&disSymFunction != 0
		p.bytes(off, stop, insns)
		off = stop
		sym = next
	}
}

// validNext is objdump's is_valid_next_sym: a later symbol of this section.
func (t *disSymtab) validNext(i, cur int, sec *disSection) bool {
	return t.syms[i].sec == sec.index && t.syms[i].value > t.syms[cur].value
}

// disPrinter prints the lines of one section.
type disPrinter struct {
	w         *bufio.Writer
	sec       *disSection
	sym       Symbolizer
	idx       *disIndex
	skipChars int // leading address characters objdump leaves out
	line      []byte
}

// objdump's defaults: a run of at least 8 zero bytes prints as "...", as
// does a run of fewer than 3 that ends the block.
const (
	disSkipZeroes      = 8
	disSkipZeroesAtEnd = 3
)

// setAddrWidth is objdump's skip_addr_chars: drop leading zeros of the
// section's end address in groups of four, keeping at least one.
func (p *disPrinter) setAddrWidth() {
	var buf []byte
	end := p.sec.vma + uint64(len(p.sec.data))
	buf = disAppendHex16(buf, end)
	n := 0
	for n < len(buf) && buf[n] == '0' {
		n++
	}
	if n == len(buf) && p.sec.vma != 0 {
		n = 0
	}
	if n != 0 {
		n = (n - 1) &^ 3
	}
	p.skipChars = n
}

// bytes is objdump's disassemble_bytes for [start, stop) of the section.
func (p *disPrinter) bytes(start, stop uint64, insns bool) {
	data := p.sec.data
	for off := start; off < stop; {
		z := off
		for z < stop && data[z] == 0 {
			z++
		}
		if n := z - off; n >= disSkipZeroes || z == stop && n < disSkipZeroesAtEnd && n > 0 {
			if z != stop {
				n &^= 3
			}
			p.w.WriteString("\t...\n")
			off += n
			continue
		}
		l := p.addrColumn(p.line[:0], p.sec.vma+off)
		if !insns {
			l = p.dataLine(l, off, stop)
			p.line = l
			p.w.Write(l)
			off += min(16, stop-off)
			continue
		}
		if stop-off < 4 {
			// The word runs past the block: objdump's disassembler fails
			// to read it and the rest of the block is skipped.
			l = append(l, "Address 0x"...)
			l = disAppendHex16(l, p.sec.vma+off)
			l = append(l, " is out of bounds.\n\n"...)
			p.line = l
			p.w.Write(l)
			return
		}
		word := binary.LittleEndian.Uint32(data[off:])
		for i := uint64(0); i < 4; i++ {
			l = disAppendByte(l, data[off+i])
			l = append(l, ' ')
		}
		l = append(l, '\t')
		l = disAppend(l, word, p.sec.vma+off, p.sym, p.idx.lookup(word))
		l = append(l, '\n')
		p.line = l
		p.w.Write(l)
		off += 4
	}
}

// addrColumn appends "   120000150:\t".
func (p *disPrinter) addrColumn(l []byte, addr uint64) []byte {
	var buf [16]byte
	disAppendHex16(buf[:0], addr)
	s := buf[p.skipChars:]
	i := 0
	for i < len(s)-1 && s[i] == '0' { // objdump keeps a last "0"
		s[i] = ' '
		i++
	}
	l = append(l, s...)
	return append(l, ':', '\t')
}

// dataLine appends objdump's dump of up to 16 bytes of an object in a code
// section: hex bytes, padding, four spaces, the printable characters.
func (p *disPrinter) dataLine(l []byte, off, stop uint64) []byte {
	n := min(16, stop-off)
	b := p.sec.data[off : off+n]
	for _, c := range b {
		l = disAppendByte(l, c)
		l = append(l, ' ')
	}
	for i := n; i < 16; i++ {
		l = append(l, "   "...)
	}
	l = append(l, "    "...)
	for _, c := range b {
		if c < 0x20 || c > 0x7E {
			c = '.'
		}
		l = append(l, c)
	}
	return append(l, '\n')
}

const disHexDigitChars = "0123456789abcdef"

func disAppendByte(l []byte, c byte) []byte {
	return append(l, disHexDigitChars[c>>4], disHexDigitChars[c&15])
}

// disAppendHex16 appends v as 16 hex digits.
func disAppendHex16(l []byte, v uint64) []byte {
	for sh := 60; sh >= 0; sh -= 4 {
		l = append(l, disHexDigitChars[v>>uint(sh)&15])
	}
	return l
}

// DisasmFileHeader returns the banner objdump -d prints before the first
// section of a file: a blank line, "NAME:     file format elf64-alpha" and
// another blank line.
func DisasmFileHeader(name string) string {
	return "\n" + name + ":     file format elf64-alpha\n\n"
}
