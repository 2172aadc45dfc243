package elfimage

import (
	"debug/elf"
	"fmt"
)

// cstring returns the NUL-terminated string at off in tab, or a reason why
// there is none ("beyond" or "unterminated").
func cstring(tab []byte, off uint64) (string, string) {
	if off >= uint64(len(tab)) {
		return "", "beyond"
	}
	s := tab[off:]
	for i, c := range s {
		if c == 0 {
			return string(s[:i]), ""
		}
	}
	return "", "unterminated"
}

// badString describes why cstring failed, for error messages.
func badString(why string, off uint64, table string, size int) string {
	if why == "beyond" {
		return fmt.Sprintf("name offset %#x is beyond %s (%d bytes)", off, table, size)
	}
	return fmt.Sprintf("name at offset %#x runs off the end of %s (%d bytes) unterminated", off, table, size)
}

func (p *parser) sectionHeaders(shoff uint64, shnum, shstrndx int) error {
	if shnum == 0 {
		return nil
	}
	p.sections = make([]rawSection, shnum)
	nameOff := make([]uint32, shnum)
	for i := range p.sections {
		o := shoff + uint64(i)*shdrSize
		nameOff[i] = p.u32(o)
		s := &p.sections[i]
		s.Type = p.u32(o + 4)
		s.Flags = p.u64(o + 8)
		s.Addr = p.u64(o + 16)
		s.Offset = p.u64(o + 24)
		s.Size = p.u64(o + 32)
		s.link = p.u32(o + 40)
		s.addralign = p.u64(o + 48)
		s.entsize = p.u64(o + 56)
	}
	inFile := func(i int) error {
		s := &p.sections[i]
		if i == 0 || s.Type == shtNobits || s.Type == 0 || p.inFile(s.Offset, s.Size) {
			return nil
		}
		name := ""
		if s.Name != "" {
			name = " (" + s.Name + ")"
		}
		return p.errf(ErrMalformed, "section %d%s [%#x, %#x+%#x) extends beyond end of file (%d bytes)",
			i, name, s.Offset, s.Offset, s.Size, len(p.data))
	}
	// The name table first, so that later messages can name sections.
	var strtab []byte
	if shstrndx != shnUndef {
		st := &p.sections[shstrndx]
		if st.Type != shtStrtab {
			return p.errf(ErrMalformed, "section name table (e_shstrndx %d) has type %v, want SHT_STRTAB", shstrndx, elf.SectionType(st.Type))
		}
		if err := inFile(shstrndx); err != nil {
			return err
		}
		strtab = p.data[st.Offset : st.Offset+st.Size]
		for i := 1; i < shnum; i++ {
			name, why := cstring(strtab, uint64(nameOff[i]))
			if why != "" {
				return p.errf(ErrMalformed, "section %d: %s", i, badString(why, uint64(nameOff[i]), "the section name table", len(strtab)))
			}
			p.sections[i].Name = name
		}
	}
	for i := 1; i < shnum; i++ {
		s := &p.sections[i]
		if err := inFile(i); err != nil {
			return err
		}
		if s.Flags&shfAlloc != 0 && s.Size > 0 && (s.Addr < p.lo || s.Addr > p.hi || s.Size > p.hi-s.Addr) {
			return p.errf(ErrMalformed, "section %d (%s): [%#x, %#x+%#x) is outside the %s", i, s.Name, s.Addr, s.Addr, s.Size, p.space)
		}
		p.im.Sections = append(p.im.Sections, s.Section)
	}
	return nil
}

// text sets TextStart/TextEnd and checks that .text is file-backed.
func (p *parser) text() error {
	im := p.im
	for i := 1; i < len(p.sections); i++ {
		s := &p.sections[i]
		if s.Name != ".text" || s.Type == shtNobits {
			continue
		}
		seg, ok := im.SegmentFor(s.Addr)
		if s.Size > 0 && (!ok || s.Addr-seg.Vaddr > seg.Filesz || s.Size > seg.Filesz-(s.Addr-seg.Vaddr)) {
			return p.errf(ErrMalformed, "section %d (.text) [%#x, %#x+%#x) is not inside the file-backed part of a PT_LOAD segment",
				i, s.Addr, s.Addr, s.Size)
		}
		if s.Size > 0 && seg.Flags&PermX == 0 {
			return p.errf(ErrMalformed, "section %d (.text) lies in a segment without execute permission (%v)", i, seg.Flags)
		}
		im.TextStart, im.TextEnd = s.Addr, s.Addr+s.Size
		return nil
	}
	for _, s := range im.Segments {
		if s.Flags&PermX != 0 {
			im.TextStart, im.TextEnd = s.Vaddr, s.Vaddr+s.Filesz
			return nil
		}
	}
	return nil
}
