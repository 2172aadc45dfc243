package symbolize

import (
	"bytes"
	"cmp"
	"context"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"dcpi/hwsim/elfimage"
	"dcpi/wire"
)

// The cluster stores each image's record (path, size, text range, symbols,
// load base), not its bytes. Like DCPI's tools, which read executables from
// the file system, dcpilist needs the bytes to disassemble; an ImageFinder
// supplies them, and OpenImageFile refuses bytes whose content key is not
// the profiled image's, so a listing never shows another build's code.

// ErrImageMismatch is wrapped by errors about image bytes whose content key
// differs from the profiled image's.
var ErrImageMismatch = errors.New("image bytes are not the profiled image")

// ErrNoImageFile is wrapped by an ImageFinder that found no bytes at all.
var ErrNoImageFile = errors.New("image file not found")

// ImageFinder finds the bytes of a profiled image: where is a description
// of where they came from ("embedded /bin/sort", a file path) for messages.
// The dcpi commands look by content key among the binaries embedded in dcpi,
// at the record's path (a user's program is recorded under its absolute
// path), under --image-dir (by path, by name, then any file with the
// image's build ID), and in the cluster's upload of the user's programs.
type ImageFinder interface {
	FindImage(ctx context.Context, rec *wire.ImageRecord) (data []byte, where string, err error)
}

// ImageKeyOf is the content key of an ELF image as hwsim/elfimage computes
// it (and the node uploads it): its build ID, or the SHA-256 of its bytes.
// It parses data as a user program, else as a kernel (vmunix's segments lie
// above user space), and returns the parsed image.
func ImageKeyOf(data []byte, path string) (wire.ImageKey, *elfimage.Image, error) {
	if k, ok := nativeKeyOf(data); ok {
		return k, nil, nil // a real machine's image: OpenNativeFile reads it
	}
	im, err := elfimage.ParseObject(data, path) // a program or a shared object
	if err != nil {
		var kerr error
		if im, kerr = elfimage.ParseKernel(data, path); kerr != nil {
			return wire.ImageKey{}, nil, err
		}
	}
	k, err := wire.ParseImageKey(im.ID.String())
	if err != nil {
		return wire.ImageKey{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, im, nil
}

// ImageFile is the bytes of a profiled image, checked against its record:
// instruction words, symbols for branch targets, and DWARF line
// information when the file has it.
type ImageFile struct {
	Rec   *wire.ImageRecord
	Where string
	ELF   *elfimage.Image

	lines    []lineRow // nil: no .debug_line
	linesErr error
}

// OpenImageFile parses data as rec's image and checks that its content key
// is rec.Key (ErrImageMismatch otherwise).
func OpenImageFile(rec *wire.ImageRecord, data []byte, where string) (*ImageFile, error) {
	k, im, err := ImageKeyOf(data, rec.Path)
	if err == nil && im == nil {
		err = fmt.Errorf("not an Alpha image")
	}
	if err != nil {
		return nil, fmt.Errorf("analysis: image %s (%v) from %s: %w", rec.Path, rec.Key, where, err)
	}
	if k != rec.Key {
		return nil, fmt.Errorf("analysis: image %s from %s is %v, the profile's is %v: %w", rec.Path, where, k, rec.Key, ErrImageMismatch)
	}
	f := &ImageFile{Rec: rec, Where: where, ELF: im}
	f.lines, f.linesErr = readLines(data)
	return f, nil
}

// Word returns the instruction word at address addr, false where the file
// maps no bytes.
func (f *ImageFile) Word(addr uint64) (uint32, bool) {
	s, ok := f.ELF.SegmentFor(addr)
	if !ok {
		return 0, false
	}
	off := addr - s.Vaddr
	if off+4 < off || off+4 > uint64(len(s.Data)) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(s.Data[off:]), true
}

// HasLines reports whether the image has DWARF line information.
func (f *ImageFile) HasLines() bool { return len(f.lines) > 0 }

// LinesErr is why the image's line information could not be read (nil
// when it was read or when there is none).
func (f *ImageFile) LinesErr() error { return f.linesErr }

// Line returns the source position of address addr from the image's
// .debug_line: the row with the greatest address at or below addr in the
// same sequence. ok is false outside every sequence.
func (f *ImageFile) Line(addr uint64) (file string, line int, ok bool) {
	return lookupLine(f.lines, addr)
}

// lineRow is one row of a line table; end marks the end of a sequence
// (addresses from it on belong to no line of that sequence).
type lineRow struct {
	addr uint64
	file string
	line int
	end  bool
}

// readLines reads every compilation unit's line table from an ELF file's
// DWARF (debug/elf reads Alpha ELF64 files; executables need no
// relocation). A file without DWARF gives nil, nil.
func readLines(data []byte) (rows []lineRow, err error) {
	defer func() {
		// debug/dwarf reads outside input; a panic there must not take
		// the tool down (DESIGN: bad input gets a clear error).
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("dwarf: malformed: %v", r)
		}
	}()
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	if ef.Section(".debug_line") == nil || ef.Section(".debug_info") == nil {
		return nil, nil
	}
	d, err := ef.DWARF()
	if err != nil {
		return nil, fmt.Errorf("dwarf: %w", err)
	}
	r := d.Reader()
	var prev dwarf.Offset
	for first := true; ; first = false {
		e, err := r.Next()
		if err != nil {
			return rows, fmt.Errorf("dwarf: %w", err)
		}
		if e == nil {
			break
		}
		// Entries come in increasing offsets. On some damaged units
		// debug/dwarf returns empty entries at offset 0 forever instead
		// of an error (golang/go#79586), so stop at the first entry that
		// does not advance.
		if !first && e.Offset <= prev {
			return rows, fmt.Errorf("dwarf: malformed: entry at %#x after one at %#x", e.Offset, prev)
		}
		prev = e.Offset
		r.SkipChildren()
		lr, err := d.LineReader(e)
		if err != nil {
			return rows, fmt.Errorf("dwarf line table: %w", err)
		}
		if lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for {
			if err := lr.Next(&le); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return rows, fmt.Errorf("dwarf line table: %w", err)
			}
			row := lineRow{addr: le.Address, line: le.Line, end: le.EndSequence}
			if le.File != nil {
				row.file = le.File.Name
			}
			rows = append(rows, row)
		}
	}
	// Stable: rows at one address keep their table order, and the last
	// one (the position the instruction is finally attributed to) wins in
	// lookupLine; an end-of-sequence row at an address where another
	// sequence begins sorts first.
	slices.SortStableFunc(rows, func(a, b lineRow) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		switch {
		case a.end && !b.end:
			return -1
		case b.end && !a.end:
			return 1
		}
		return 0
	})
	return rows, nil
}

func lookupLine(rows []lineRow, addr uint64) (string, int, bool) {
	i := sort.Search(len(rows), func(i int) bool { return rows[i].addr > addr }) - 1
	if i < 0 || rows[i].end || rows[i].line == 0 {
		return "", 0, false
	}
	return rows[i].file, rows[i].line, true
}
