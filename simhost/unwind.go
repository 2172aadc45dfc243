package simhost

import (
	"fmt"

	"dcpi/hwsim/elfimage"
	"dcpi/internal/cfi"
	"dcpi/node"
	"dcpi/node/unwind"
)

// UnwindTable compiles the .eh_frame of the file m maps into the stack
// walk's table, with offsets from m.Base (node.UnwindSource). vmunix and
// files the host does not have get none (nil, nil), as do images without
// call frame information: the walk scans their prologues.
func (s *Images) UnwindTable(m node.Mapping) (*unwind.Table, error) {
	data, ok := s.file(m.Path)
	if !ok {
		return nil, nil
	}
	im, err := elfimage.ParseObject(data, m.Path)
	if err != nil {
		return nil, fmt.Errorf("simhost: image %s: %w", m.Path, err)
	}
	// Offsets from the image's own address of Base: a shared object's
	// table serves it wherever it is loaded.
	return UnwindTableOf(im, m.ImageBase())
}

// UnwindTableOf compiles im's call frame information for an image loaded
// with its lowest page at base (package cfi, with Alpha's registers:
// r30 and r15 as CFA bases, the RA in r26, r23 or r15). Rows the walk
// cannot follow stop it; PCs no FDE covers are left to its prologue
// heuristic.
func UnwindTableOf(im *elfimage.Image, base uint64) (*unwind.Table, error) {
	fdes, err := im.FrameInfo()
	if err != nil {
		return nil, err
	}
	var exec []unwind.Range
	for _, seg := range im.Segments {
		if seg.Flags&elfimage.PermX != 0 && seg.Vaddr >= base {
			exec = append(exec, unwind.Range{Lo: seg.Vaddr - base, Hi: seg.Vaddr + seg.Memsz - base})
		}
	}
	return cfi.Table(unwind.Alpha, fdes, base, exec)
}
