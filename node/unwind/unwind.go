// Package unwind owns the call-stack walks over compact per-image unwind
// tables (compiled from an image's .eh_frame by whoever reads images;
// node never reads an image file): the Alpha walk of the driver's
// interrupt handler over a process's memory, with the immutable
// per-process set of tables the handler consults without a lock and the
// classic prologue-scanning heuristic as a fallback where a table has no
// row; and the native walk (native.go) of a stack a Linux kernel copied
// with a sample (x86-64, arm64), with the frame pointer as its fallback.
// The tables, rows and lookups are the same for both; an Arch says which
// registers a row may name. It is pure: no goroutines, no I/O, and it
// imports nothing of the project, so the driver can use it.
package unwind

import (
	"errors"
	"fmt"
	"slices"
)

// Alpha integer registers the walk tracks.
const (
	RegFP = 15 // frame pointer (s6), the CFA base of alloca'ing procedures
	RegT9 = 23 // the return address of the millicode routines (__divqu, __remqu...)
	RegRA = 26 // return address
	RegSP = 30 // stack pointer
)

// Where says where a row finds one of the caller's registers.
type Where uint8

const (
	// Same: the register still holds the caller's value (the callee has
	// not saved or changed it; for the return address, it is still in the
	// register the row names, r26 in gcc's CIEs).
	Same Where = iota
	// AtCFA: saved in memory at CFA+offset.
	AtCFA
	// Undefined: the caller has none; for the return address, this is the
	// outermost frame.
	Undefined
	// Unknown: a rule the walk cannot follow (a DWARF expression, a
	// register it does not track): the walk stops there, Truncated.
	Unknown
)

// Row is the unwind rule of a range of PCs of one image: the canonical
// frame address (the caller's SP) is CFAReg+CFAOff, and the return address
// and the caller's FP are where RA and FP say. Rows are compiled from
// DWARF call frame information; the heuristic makes one the same shape.
type Row struct {
	Start  uint64 // offset from the image's base; the row lasts until the next row's Start
	CFAOff int32
	RAOff  int32 // RA at CFA+RAOff when RA == AtCFA
	FPOff  int32 // caller's FP at CFA+FPOff when FP == AtCFA
	CFAReg uint8 // RegSP or RegFP; 0: no rule here (a gap between FDEs)
	RA, FP Where
	RAReg  uint8 // the register holding the return address when RA == Same: RegRA, RegT9 (millicode) or RegFP (_start)
}

// Range is a half-open range of offsets from an image's base.
type Range struct{ Lo, Hi uint64 }

// Table is one image's unwind rules, immutable once built: rows sorted by
// Start, and the executable ranges a return address must lie in.
type Table struct {
	starts []uint64 // rows' Starts, searched apart from the rows: fewer lines touched
	rows   []Row
	exec   []Range
	arch   *Arch
}

// Arch is what a table's rows may name of an instruction set: the DWARF
// numbers of the registers a CFA is based on, and of those a row may say
// still hold the return address (RA == Same).
type Arch struct {
	Name   string
	SP, FP uint8
	RARegs []uint8
	// AddrMask clears what is not address in a saved return address
	// (arm64's pointer authentication signs the bits above the virtual
	// address).
	AddrMask uint64
}

// The instruction sets the walks know.
var (
	Alpha = &Arch{Name: "alpha", SP: RegSP, FP: RegFP, RARegs: []uint8{RegRA, RegT9, RegFP}, AddrMask: ^uint64(0)}
	// AMD64: rsp and rbp (DWARF 7 and 6); a call pushes the return
	// address, so no register holds it.
	AMD64 = &Arch{Name: "amd64", SP: 7, FP: 6, AddrMask: ^uint64(0)}
	// ARM64: sp and x29; x30 (the link register) holds the return
	// address until the callee saves it. Addresses are 48 bits.
	ARM64 = &Arch{Name: "arm64", SP: 31, FP: 29, RARegs: []uint8{30}, AddrMask: 1<<48 - 1}
)

// ErrTable is wrapped by NewTable's errors.
var ErrTable = errors.New("invalid unwind table")

// NewTable builds an Alpha table from rows (any order; a row with CFAReg
// 0 ends the one before it) and the image's executable ranges.
func NewTable(rows []Row, exec []Range) (*Table, error) { return NewTableFor(Alpha, rows, exec) }

// NewTableFor builds a table of arch's rows, as NewTable does Alpha's.
func NewTableFor(arch *Arch, rows []Row, exec []Range) (*Table, error) {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b Row) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	for i, r := range rows {
		if r.CFAReg != 0 && r.CFAReg != arch.SP && r.CFAReg != arch.FP {
			return nil, fmt.Errorf("unwind: row %d: CFA register r%d on %s: %w", i, r.CFAReg, arch.Name, ErrTable)
		}
		if r.RA > Unknown || r.FP > Unknown {
			return nil, fmt.Errorf("unwind: row %d: unknown rule: %w", i, ErrTable)
		}
		if r.CFAReg != 0 && r.RA == Same && !slices.Contains(arch.RARegs, r.RAReg) {
			return nil, fmt.Errorf("unwind: row %d: return address in r%d on %s: %w", i, r.RAReg, arch.Name, ErrTable)
		}
	}
	// Keep the last of rows at one Start (a later FDE's row wins).
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].Start == r.Start {
			out[n-1] = r
			continue
		}
		out = append(out, r)
	}
	exec = slices.Clone(exec)
	for _, e := range exec {
		if e.Hi < e.Lo {
			return nil, fmt.Errorf("unwind: executable range [%#x, %#x): %w", e.Lo, e.Hi, ErrTable)
		}
	}
	t := &Table{rows: slices.Clip(out), exec: exec, starts: make([]uint64, len(out)), arch: arch}
	for i, r := range t.rows {
		t.starts[i] = r.Start
	}
	return t, nil
}

// Arch is the instruction set the table's rows are for.
func (t *Table) Arch() *Arch { return t.arch }

// Rows is the number of rows, for figures.
func (t *Table) Rows() int {
	if t == nil {
		return 0
	}
	return len(t.rows)
}

// lookup returns the row covering offset off: a binary search.
func (t *Table) lookup(off uint64) (*Row, bool) {
	if t == nil {
		return nil, false
	}
	lo, hi := 0, len(t.starts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.starts[m] <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 || t.rows[lo-1].CFAReg == 0 {
		return nil, false
	}
	return &t.rows[lo-1], true
}

func (t *Table) executable(off uint64) bool {
	for _, e := range t.exec {
		if off >= e.Lo && off < e.Hi {
			return true
		}
	}
	return false
}

// Image is one mapping of a process: where an image lies, and its table
// (nil: no call frame information, the heuristic does every frame).
type Image struct {
	Base, Size uint64
	Table      *Table
}

// Space is the images of one process, immutable once built, so the
// interrupt handler reads it while the daemon builds the next one.
type Space struct {
	images []Image // sorted by Base
}

// NewSpace returns the space of images (any order).
func NewSpace(images []Image) *Space {
	s := &Space{images: slices.Clone(images)}
	slices.SortFunc(s.images, func(a, b Image) int {
		switch {
		case a.Base < b.Base:
			return -1
		case a.Base > b.Base:
			return 1
		}
		return 0
	})
	return s
}

// With returns a new space with im added (the old one is unchanged).
func (s *Space) With(im Image) *Space {
	var imgs []Image
	if s != nil {
		imgs = s.images
	}
	return NewSpace(append(slices.Clone(imgs), im))
}

// Images returns the space's images, sorted by base.
func (s *Space) Images() []Image {
	if s == nil {
		return nil
	}
	return slices.Clone(s.images)
}

func (s *Space) find(pc uint64) *Image {
	if s == nil {
		return nil
	}
	for i := range s.images {
		if im := &s.images[i]; pc-im.Base < im.Size {
			return im
		}
	}
	return nil
}

// Memory reads the interrupted process's memory: an aligned 8-byte load
// that fails, never faults, on memory that is not mapped.
type Memory interface {
	Read8(addr uint64) (v uint64, ok bool)
}

// Regs is the interrupted user context: what the walk starts from. T9
// (r23) matters only when the sample is in a millicode routine.
type Regs struct{ PC, SP, FP, RA, T9 uint64 }

// Result says what a walk did: N frames written, whether it stopped before
// the outermost frame, and its work, which the driver's cost model
// charges.
type Result struct {
	N         int
	Truncated bool
	Steps     int // frames unwound (table lookups)
	Reads     int // memory reads: saved registers and, for the heuristic, code
	Heuristic int // steps that scanned code because no row covered the PC
	// FramePointer: steps of the native walk that followed the frame
	// pointer because no row covered the PC.
	FramePointer int
}

// Walk writes the call chain of r into out, leaf first: out[0] is r.PC and
// each later entry the return address of the frame before. It stops at the
// outermost frame (a return address of zero or undefined), at len(out)
// frames (Truncated), or at the first frame it cannot unwind or validate
// (Truncated): a return address outside every executable range, a CFA
// that does not increase, a read that fails. It allocates nothing.
func (s *Space) Walk(r Regs, mem Memory, out []uint64) Result {
	var res Result
	if len(out) == 0 {
		res.Truncated = true
		return res
	}
	out[0] = r.PC
	res.N = 1
	pc, sp, fp := r.PC, r.SP, r.FP
	// r26 and r23 hold the caller's return address only as long as every
	// frame below left them alone: a millicode routine (its RA in r23)
	// keeps r26, any other procedure keeps neither once it has called.
	raLive, t9Live := true, true
	for frame := 0; ; frame++ {
		look := pc
		if frame > 0 {
			look = pc - 4 // the call instruction: a noreturn call may end its procedure
		}
		im := s.find(look)
		if im == nil {
			res.Truncated = true
			return res
		}
		res.Steps++
		row, ok := im.Table.lookup(look - im.Base)
		if !ok {
			res.Heuristic++
			h, ok := heuristic(im, look, frame == 0, mem, &res)
			if !ok {
				res.Truncated = true
				return res
			}
			row = &h
		}
		base := sp
		if row.CFAReg == RegFP {
			base = fp
		}
		cfa := base + uint64(int64(row.CFAOff))
		var next uint64
		millicode := false
		switch row.RA {
		case Undefined:
			return res // the outermost frame
		case AtCFA:
			v, ok := read(mem, cfa+uint64(int64(row.RAOff)), &res)
			if !ok {
				res.Truncated = true
				return res
			}
			next = v
		case Same:
			switch {
			case row.RAReg == RegFP:
				next = fp
			case row.RAReg == RegRA && raLive:
				next = r.RA
			case row.RAReg == RegT9 && t9Live:
				next, millicode = r.T9, true
			default:
				// The register was overwritten by a call since: a row
				// saying the RA is still there is wrong for this frame.
				res.Truncated = true
				return res
			}
		default:
			res.Truncated = true
			return res
		}
		raLive = raLive && millicode
		t9Live = false
		if next == 0 {
			return res // the outermost frame: _start clears its RA
		}
		// The CFA never goes down, and a frame whose RA came from memory
		// must move it up: a frame above 0 that did not would read the
		// same slot again, forever. (Frames whose RA is in a register
		// may share a CFA: each register serves once.)
		if cfa < sp || (frame > 0 && cfa == sp && row.RA == AtCFA) || next&3 != 0 {
			res.Truncated = true
			return res
		}
		if row.FP == AtCFA {
			v, ok := read(mem, cfa+uint64(int64(row.FPOff)), &res)
			if !ok {
				res.Truncated = true
				return res
			}
			fp = v
		}
		caller := s.find(next - 4)
		if caller == nil || !caller.Table.executableOrUnknown(next-4-caller.Base) {
			res.Truncated = true
			return res
		}
		if res.N == len(out) {
			res.Truncated = true
			return res
		}
		out[res.N] = next
		res.N++
		sp, pc = cfa, next
	}
}

// executableOrUnknown: an image without a table has no executable ranges
// to check against; its mapping must do.
func (t *Table) executableOrUnknown(off uint64) bool {
	if t == nil || len(t.exec) == 0 {
		return true
	}
	return t.executable(off)
}

func read(mem Memory, addr uint64, res *Result) (uint64, bool) {
	if mem == nil || addr&7 != 0 {
		return 0, false
	}
	res.Reads++
	return mem.Read8(addr)
}
