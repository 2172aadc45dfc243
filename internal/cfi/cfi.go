// Package cfi compiles the call frame information hwsim/elfimage decodes
// from an image's .eh_frame (its FDEs' rows) into the unwind tables of
// package unwind, for any instruction set an unwind.Arch describes: the
// simulated Alpha's images (simhost) and a Linux host's native ones
// (linuxhost, x86-64 and arm64) share it. It is pure. It lives outside
// node, which may import nothing of the simulator but its ISA (the
// parser is hwsim's).
package cfi

import (
	"dcpi/hwsim/elfimage"
	"dcpi/node/unwind"
)

// Table compiles fdes, parsed with arch.FP as their frame-pointer column
// (elfimage.ParseFrames), for an image whose lowest page is at base:
// the rows' offsets count from base, and FDEs below it are left out.
// exec are the image's executable ranges, offsets from base too. Rows
// the walk cannot follow (a CFA other than the stack or frame pointer
// plus an offset, a return address or frame pointer held by an
// expression or in another register) stop the walk; PCs no FDE covers
// are left to the walk's fallback (Alpha's prologue heuristic, the frame
// pointer natively).
func Table(arch *unwind.Arch, fdes []elfimage.FDE, base uint64, exec []unwind.Range) (*unwind.Table, error) {
	var rows []unwind.Row
	for _, f := range fdes {
		if f.Start < base {
			continue
		}
		for _, r := range f.Rows {
			rows = append(rows, compileRow(arch, f, r, base))
		}
		rows = append(rows, unwind.Row{Start: f.End - base}) // a gap until the next FDE
	}
	return unwind.NewTableFor(arch, rows, exec)
}

func compileRow(arch *unwind.Arch, f elfimage.FDE, r elfimage.FrameRow, base uint64) unwind.Row {
	// A rule the walk cannot follow stops it (Truncated) rather than
	// leave the PC to the fallback, which would guess where the compiler
	// has said otherwise.
	stop := unwind.Row{Start: r.Addr - base, CFAReg: arch.SP, RA: unwind.Unknown}
	if r.CFA.Expr || (r.CFA.Reg != arch.SP && r.CFA.Reg != arch.FP) || !fits32(r.CFA.Offset) ||
		!fits32(r.RA.Offset) || !fits32(r.FP.Offset) {
		return stop
	}
	row := unwind.Row{Start: r.Addr - base, CFAReg: r.CFA.Reg, CFAOff: int32(r.CFA.Offset)}
	switch r.RA.Kind {
	case elfimage.RuleSame:
		if !isRAReg(arch, f.RAColumn) {
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

func isRAReg(arch *unwind.Arch, reg uint8) bool {
	for _, r := range arch.RARegs {
		if r == reg {
			return true
		}
	}
	return false
}

func fits32(v int64) bool { return v == int64(int32(v)) }
