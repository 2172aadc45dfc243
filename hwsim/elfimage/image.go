package elfimage

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
)

// Image is a parsed ELF64 Alpha executable or (ParseObject) shared object. Build one with Parse and
// treat it as read-only: Lookup and SymbolFor use an index Parse builds and
// are then safe for concurrent use. (An Image assembled by hand still
// answers them, from a temporary index built on each call.)
type Image struct {
	Path  string
	ID    ImageID // content identity: build ID if the file has one, else SHA-256 of the bytes
	Entry uint64

	Segments []Segment // PT_LOAD program headers, in file order
	TLS      *Segment  // PT_TLS if present (glibc finds it through AT_PHDR)

	// Program headers as the process sees them, for AT_PHDR/AT_PHENT/AT_PHNUM.
	// PhdrAddr is the virtual address of the header table inside a PT_LOAD
	// segment, computed as Linux does (the PT_LOAD whose file range covers
	// e_phoff); 0 if no segment maps it.
	PhdrAddr  uint64
	PhentSize int
	PhNum     int

	// Symbols are the functions (STT_FUNC, STT_GNU_IFUNC) and the other
	// symbols that lie in executable sections (assembler labels such as
	// _start, sized NOTYPE routines such as __divqu), sorted by address and,
	// at one address, best name first (the order objdump prefers).
	Symbols []Symbol

	// TextStart and TextEnd bound the .text section (end exclusive). If the
	// file has no .text section they bound the file-backed part of the first
	// executable segment.
	TextStart, TextEnd uint64

	// Sections are the section headers (index 0, the null section, omitted),
	// for tools that want more than .text. Empty if the file has none.
	Sections []Section

	Size int64 // file size in bytes

	// Interp is the PT_INTERP path of a dynamically linked executable
	// ("/lib/ld-linux.so.2"), empty for a static one.
	Interp string
	// Shared is true for an ET_DYN file (a shared object or the dynamic
	// loader), whose addresses are offsets from a load bias; only
	// ParseObject accepts one.
	Shared bool

	idx *symIndex // built by Parse; see symbols.go
}

// Segment is one PT_LOAD (or the PT_TLS) program header. Data holds the
// Filesz bytes of the file it maps; memory from Vaddr+Filesz to Vaddr+Memsz is
// zero. Data aliases the slice given to Parse (with its capacity clipped), so
// the caller must not modify that slice while the Image is in use.
type Segment struct {
	Vaddr  uint64
	Memsz  uint64
	Filesz uint64
	Offset uint64
	Flags  Perm
	Align  uint64
	Data   []byte
}

// End returns the first address past the segment in memory.
func (s *Segment) End() uint64 { return s.Vaddr + s.Memsz }

// Contains reports whether addr lies in [Vaddr, Vaddr+Memsz).
func (s *Segment) Contains(addr uint64) bool { return addr >= s.Vaddr && addr-s.Vaddr < s.Memsz }

// Perm is a segment's access permission, with the ELF PF_* bit values.
type Perm uint8

// Permission bits (ELF p_flags values).
const (
	PermX Perm = 1 << iota
	PermW
	PermR
)

func (p Perm) String() string {
	b := []byte("---")
	if p&PermR != 0 {
		b[0] = 'r'
	}
	if p&PermW != 0 {
		b[1] = 'w'
	}
	if p&PermX != 0 {
		b[2] = 'x'
	}
	return string(b)
}

// Section is one section header, as far as tools need it.
type Section struct {
	Name   string
	Type   uint32 // SHT_* value
	Flags  uint64 // SHF_* bits
	Addr   uint64
	Size   uint64
	Offset uint64
}

// Alloc reports whether the section occupies memory at run time (SHF_ALLOC).
func (s *Section) Alloc() bool { return s.Flags&shfAlloc != 0 }

// Exec reports whether the section holds instructions (SHF_EXECINSTR).
func (s *Section) Exec() bool { return s.Flags&shfExecInstr != 0 }

// Symbol is one symbol table entry that names code.
type Symbol struct {
	Name   string
	Addr   uint64
	Size   uint64 // st_size; 0 for labels and for assembler routines without .size
	Kind   SymKind
	Global bool // STB_GLOBAL or STB_WEAK: visible outside its object file
	Weak   bool // STB_WEAK
}

// SymKind is a symbol's type (ELF STT_*), for the types Image keeps.
type SymKind uint8

// Symbol kinds.
const (
	SymNoType SymKind = iota // STT_NOTYPE: an assembler label
	SymObject                // STT_OBJECT
	SymFunc                  // STT_FUNC
	SymIFunc                 // STT_GNU_IFUNC
	SymTLS                   // STT_TLS (never in Image.Symbols: its value is a TLS offset)
)

func (k SymKind) String() string {
	switch k {
	case SymNoType:
		return "NOTYPE"
	case SymObject:
		return "OBJECT"
	case SymFunc:
		return "FUNC"
	case SymIFunc:
		return "IFUNC"
	case SymTLS:
		return "TLS"
	}
	return fmt.Sprintf("SymKind(%d)", uint8(k))
}

// IDKind says where an ImageID came from.
type IDKind uint8

// Image identity kinds.
const (
	IDSHA256  IDKind = iota // SHA-256 of the whole file
	IDBuildID               // the NT_GNU_BUILD_ID note the linker wrote
)

func (k IDKind) String() string {
	switch k {
	case IDSHA256:
		return "sha256"
	case IDBuildID:
		return "buildid"
	}
	return fmt.Sprintf("IDKind(%d)", uint8(k))
}

// ImageID is an image's content identity, used by the daemon and the
// coordinator to name an image once across hosts and runs. A linker build ID
// is preferred because stripping a binary keeps it, so samples from a stripped
// and an unstripped copy of one build land on one image.
type ImageID struct {
	Kind  IDKind
	Bytes []byte
}

// String gives "buildid:<hex>" or "sha256:<hex>".
func (id ImageID) String() string { return id.Kind.String() + ":" + hex.EncodeToString(id.Bytes) }

// Key is a comparable form of the ID (usable as a map key); it equals String.
func (id ImageID) Key() string { return id.String() }

// Equal reports whether two IDs name the same image.
func (id ImageID) Equal(o ImageID) bool { return id.Kind == o.Kind && bytes.Equal(id.Bytes, o.Bytes) }

// IsZero reports whether the ID is unset.
func (id ImageID) IsZero() bool { return len(id.Bytes) == 0 }

// ParseImageID inverts String.
func ParseImageID(s string) (ImageID, error) {
	kind, h, ok := strings.Cut(s, ":")
	if !ok {
		return ImageID{}, fmt.Errorf("elfimage: image ID %q: want kind:hex", s)
	}
	var id ImageID
	switch kind {
	case "buildid":
		id.Kind = IDBuildID
	case "sha256":
		id.Kind = IDSHA256
	default:
		return ImageID{}, fmt.Errorf("elfimage: image ID %q: unknown kind %q (want buildid or sha256)", s, kind)
	}
	b, err := hex.DecodeString(h)
	if err != nil || len(b) == 0 {
		return ImageID{}, fmt.Errorf("elfimage: image ID %q: bad hex digits", s)
	}
	if id.Kind == IDSHA256 && len(b) != 32 {
		return ImageID{}, fmt.Errorf("elfimage: image ID %q: sha256 needs 32 bytes, got %d", s, len(b))
	}
	id.Bytes = b
	return id, nil
}

// SegmentFor returns the PT_LOAD segment containing addr.
func (im *Image) SegmentFor(addr uint64) (*Segment, bool) {
	for i := range im.Segments {
		if im.Segments[i].Contains(addr) {
			return &im.Segments[i], true
		}
	}
	return nil, false
}

// Text returns the bytes of [TextStart, TextEnd). Parse checked that they are
// file-backed by one segment.
func (im *Image) Text() []byte {
	s, ok := im.SegmentFor(im.TextStart)
	if !ok || im.TextEnd < im.TextStart {
		return nil
	}
	lo, hi := im.TextStart-s.Vaddr, im.TextEnd-s.Vaddr
	if hi > uint64(len(s.Data)) {
		return nil
	}
	return s.Data[lo:hi:hi]
}
