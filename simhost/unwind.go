package simhost

import (
	"fmt"

	"dcpi/hwsim/elfimage"
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
// with its lowest page at base. Rows the walk cannot follow (a CFA other
// than r30 or r15 plus an offset, a return address or r15 held by an
// expression or in another register) stop the walk; PCs no FDE covers
// are left to its prologue heuristic.
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
	if len(fdes) == 0 {
		return unwind.NewTable(nil, exec)
	}
	var rows []unwind.Row
	for _, f := range fdes {
		if f.Start < base {
			continue
		}
		for _, r := range f.Rows {
			rows = append(rows, compileRow(f, r, base))
		}
		rows = append(rows, unwind.Row{Start: f.End - base}) // a gap until the next FDE
	}
	return unwind.NewTable(rows, exec)
}

func compileRow(f elfimage.FDE, r elfimage.FrameRow, base uint64) unwind.Row {
	// A rule the walk cannot follow stops it (Truncated) rather than
	// leave the PC to the heuristic, which would guess where the
	// compiler has said otherwise.
	stop := unwind.Row{Start: r.Addr - base, CFAReg: unwind.RegSP, RA: unwind.Unknown}
	if r.CFA.Expr || (r.CFA.Reg != unwind.RegSP && r.CFA.Reg != unwind.RegFP) || !fits32(r.CFA.Offset) ||
		!fits32(r.RA.Offset) || !fits32(r.FP.Offset) {
		return stop
	}
	row := unwind.Row{Start: r.Addr - base, CFAReg: r.CFA.Reg, CFAOff: int32(r.CFA.Offset)}
	switch r.RA.Kind {
	case elfimage.RuleSame:
		if f.RAColumn != unwind.RegRA && f.RAColumn != unwind.RegFP && f.RAColumn != unwind.RegT9 {
			return stop
		}
		row.RA, row.RAReg = unwind.Same, f.RAColumn
	case elfimage.RuleOffset:
		row.RA, row.RAOff = unwind.AtCFA, int32(r.RA.Offset)
	case elfimage.RuleUndefined:
		row.RA = unwind.Undefined
	default:
		return stop
	}
	switch r.FP.Kind {
	case elfimage.RuleSame, elfimage.RuleUndefined:
		row.FP = unwind.Same
	case elfimage.RuleOffset:
		row.FP, row.FPOff = unwind.AtCFA, int32(r.FP.Offset)
	default:
		return stop
	}
	return row
}

func fits32(v int64) bool { return v == int64(int32(v)) }
