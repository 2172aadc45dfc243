package elfimage

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// buildID sets im.ID from the first NT_GNU_BUILD_ID note (in SHT_NOTE
// sections, or in PT_NOTE segments if the file has no section headers), or
// from SHA-256 of the file.
func (p *parser) buildID(phdrs []rawPhdr) error {
	type area struct {
		what      string
		off, size uint64
		align     uint64
	}
	var areas []area
	if len(p.sections) > 0 {
		for i := 1; i < len(p.sections); i++ {
			s := &p.sections[i]
			if s.Type == shtNote {
				areas = append(areas, area{fmt.Sprintf("section %d (%s)", i, s.Name), s.Offset, s.Size, s.addralign})
			}
		}
	} else {
		for i, ph := range phdrs {
			if ph.typ != ptNote {
				continue
			}
			if !p.inFile(ph.off, ph.filesz) {
				return p.errf(ErrMalformed, "segment %d (PT_NOTE) file range [%#x, %#x+%#x) extends beyond end of file (%d bytes)",
					i, ph.off, ph.off, ph.filesz, len(p.data))
			}
			areas = append(areas, area{fmt.Sprintf("segment %d (PT_NOTE)", i), ph.off, ph.filesz, ph.align})
		}
	}
	for _, a := range areas {
		id, err := p.notes(a.what, p.data[a.off:a.off+a.size], a.align)
		if err != nil {
			return err
		}
		if id != nil {
			p.im.ID = ImageID{Kind: IDBuildID, Bytes: id}
			return nil
		}
	}
	sum := sha256.Sum256(p.data)
	p.im.ID = ImageID{Kind: IDSHA256, Bytes: sum[:]}
	return nil
}

// notes walks the notes in b and returns a copy of the GNU build ID, if any.
// Name and descriptor are padded to 4 bytes, or to 8 when the containing
// section or segment is 8-aligned (as for .note.gnu.property).
func (p *parser) notes(what string, b []byte, align uint64) ([]byte, error) {
	pad := uint64(4)
	if align == 8 {
		pad = 8
	}
	roundUp := func(n uint64) uint64 { return (n + pad - 1) &^ (pad - 1) }
	var off uint64
	n := uint64(len(b))
	for off < n {
		if n-off < 12 {
			return nil, p.errf(ErrMalformed, "%s: truncated note header at offset %#x", what, off)
		}
		namesz := uint64(binary.LittleEndian.Uint32(b[off:]))
		descsz := uint64(binary.LittleEndian.Uint32(b[off+4:]))
		typ := binary.LittleEndian.Uint32(b[off+8:])
		off += 12
		if roundUp(namesz) > n-off {
			return nil, p.errf(ErrMalformed, "%s: note name (%d bytes) extends past the end", what, namesz)
		}
		name := b[off : off+namesz]
		off += roundUp(namesz)
		if descsz > n-off {
			return nil, p.errf(ErrMalformed, "%s: note descriptor (%d bytes) extends past the end", what, descsz)
		}
		desc := b[off : off+descsz]
		off = min(n, off+roundUp(descsz))
		if typ == ntGNUBuildID && string(name) == "GNU\x00" && len(desc) > 0 {
			return append([]byte(nil), desc...), nil
		}
	}
	return nil, nil
}
