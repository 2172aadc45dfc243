package disasm

// The layout of objdump -d's listing (binutils objdump.c:
// disassemble_section, disassemble_bytes): label lines, the address and
// bytes columns, "..." for runs of zeros, and data dumps of objects that
// sit in code sections.

import (
	"bufio"
	"encoding/binary"
	"strconv"

	"dcpi/hwsim/elfimage"
)

// printSection is objdump's disassemble_section: blocks of bytes between
// consecutive symbols, each under its label.
func printSection(w *bufio.Writer, t *elfimage.ObjdumpSymbols, sec *section, pal PAL) {
	size := uint64(len(sec.data))
	var symz Symbolizer
	if len(t.Syms) > 0 {
		symz = secSymbolizer{t, sec}
	}
	p := printer{w: w, sec: sec, sym: symz, idx: getIndex(pal)}
	p.setAddrWidth()

	place := 0
	sym := t.Find(sec.vma, sec.objdump, true)
	if sym >= 0 {
		place = sym
	}
	var line []byte
	for off := uint64(0); off < size; {
		addr := sec.vma + off
		// The label.
		line = append(line[:0], '\n')
		line = appendHex16(line, addr)
		line = append(line, " <"...)
		if sym >= 0 {
			line = appendSymOff(line, t.Syms[sym].Name, addr-t.Syms[sym].Value)
		} else {
			line = appendSymOff(line, sec.name, addr-sec.vma)
		}
		line = append(line, ">:\n"...)
		w.Write(line)

		next := -1
		switch {
		case sym >= 0 && t.Syms[sym].Value > addr:
			next = sym
		case sym >= 0:
			for place < len(t.Syms) && !validNext(t, place, sym, sec) {
				place++
			}
			if place < len(t.Syms) {
				next = place
			}
		}
		stop := size
		switch {
		case sym >= 0 && t.Syms[sym].Value > addr:
			stop = t.Syms[sym].Value - sec.vma
		case next >= 0:
			stop = t.Syms[next].Value - sec.vma
		}
		if stop > size || stop <= off {
			stop = size
		}
		// A symbol marked as an object (and not a function) is dumped as
		// data.
		insns := sym < 0 || t.Syms[sym].Section != sec.objdump.Index || t.Syms[sym].Value > addr ||
			t.Syms[sym].HoldsCode()
		p.bytes(off, stop, insns)
		off = stop
		sym = next
	}
}

// validNext is objdump's is_valid_next_sym: a later symbol of this section.
func validNext(t *elfimage.ObjdumpSymbols, i, cur int, sec *section) bool {
	return t.Syms[i].Section == sec.objdump.Index && t.Syms[i].Value > t.Syms[cur].Value
}

// printer prints the lines of one section.
type printer struct {
	w         *bufio.Writer
	sec       *section
	sym       Symbolizer
	idx       *index
	skipChars int // leading address characters objdump leaves out
	line      []byte
}

// objdump's defaults: a run of at least 8 zero bytes prints as "...", as
// does a run of fewer than 3 that ends the block.
const (
	skipZeroes      = 8
	skipZeroesAtEnd = 3
)

// setAddrWidth is objdump's skip_addr_chars: drop leading zeros of the
// section's end address in groups of four, keeping at least one.
func (p *printer) setAddrWidth() {
	var buf []byte
	end := p.sec.vma + uint64(len(p.sec.data))
	buf = appendHex16(buf, end)
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
func (p *printer) bytes(start, stop uint64, insns bool) {
	data := p.sec.data
	for off := start; off < stop; {
		z := off
		for z < stop && data[z] == 0 {
			z++
		}
		if n := z - off; n >= skipZeroes || z == stop && n < skipZeroesAtEnd && n > 0 {
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
			l = strconv.AppendUint(l, p.sec.vma+off, 16)
			l = append(l, " is out of bounds.\n\n"...)
			p.line = l
			p.w.Write(l)
			return
		}
		word := binary.LittleEndian.Uint32(data[off:])
		for i := uint64(0); i < 4; i++ {
			l = appendByte(l, data[off+i])
			l = append(l, ' ')
		}
		l = append(l, '\t')
		l = appendInsn(l, word, p.sec.vma+off, p.sym, p.idx.lookup(word))
		l = append(l, '\n')
		p.line = l
		p.w.Write(l)
		off += 4
	}
}

// addrColumn appends "   120000150:\t".
func (p *printer) addrColumn(l []byte, addr uint64) []byte {
	var buf [16]byte
	appendHex16(buf[:0], addr)
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
func (p *printer) dataLine(l []byte, off, stop uint64) []byte {
	n := min(16, stop-off)
	b := p.sec.data[off : off+n]
	for _, c := range b {
		l = appendByte(l, c)
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

const hexDigitChars = "0123456789abcdef"

func appendByte(l []byte, c byte) []byte {
	return append(l, hexDigitChars[c>>4], hexDigitChars[c&15])
}

// appendHex16 appends v as 16 hex digits.
func appendHex16(l []byte, v uint64) []byte {
	for sh := 60; sh >= 0; sh -= 4 {
		l = append(l, hexDigitChars[v>>uint(sh)&15])
	}
	return l
}
