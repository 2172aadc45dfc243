package cfg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
)

// ErrNoProcedure is returned (wrapped) for a procedure name or address the
// image's symbols do not cover.
var ErrNoProcedure = errors.New("no such procedure")

// Options change how graphs are built.
type Options struct {
	// SplitAtCalls ends a block after every call (bsr, jsr), for analyses
	// that want a call's return to start a block. The paper's dcpicalc
	// keeps calls inside blocks (the default).
	SplitAtCalls bool
}

// Range is one procedure: the best symbol name at Start and the addresses
// its instructions occupy.
type Range struct {
	Name       string
	Start, End uint64
}

// Code is an image prepared for building CFGs: its procedures, its global
// pointer and the alternate entry points found by scanning every branch.
// It is read-only after NewCode and safe for concurrent use.
type Code struct {
	im    *elfimage.Image
	opt   Options
	procs []Range        // by Start, disjoint
	named map[string]int // every symbol name at a procedure's start
	// alt holds addresses strictly inside a procedure that a branch or
	// call from elsewhere targets: entries other than Start.
	alt map[uint64]bool
	// gp is the global pointer every procedure's prologue computes, if
	// they agree (a static image has one GOT).
	gp      uint64
	gpKnown bool
	got     [2]uint64 // the .got section, read as constant in a static image
	// noret holds the starts of procedures whose code has no way out: no
	// ret, no jmp, no branch beyond the procedure, no running off its end
	// (abort, exit, a wrapper that calls them last).
	noret map[uint64]bool
	execs [][2]uint64
}

// decodeModel decodes every extension: a CFG is structure, and glibc keeps
// code for later CPUs that it selects at run time.
var decodeModel = alpha.EV67

// NewCode prepares im. Procedures are its code symbols (functions, and
// labels not inside a sized function), one per address; a sized symbol
// covers [Addr, Addr+Size), an unsized one runs to the next procedure or
// the end of its executable section, and no procedure overlaps the next.
func NewCode(im *elfimage.Image, opt Options) (*Code, error) {
	if im == nil {
		return nil, fmt.Errorf("cfg: nil image")
	}
	c := &Code{im: im, opt: opt, named: map[string]int{}, alt: map[uint64]bool{}, noret: map[uint64]bool{}}
	for _, s := range im.Sections {
		if s.Exec() && s.Alloc() && s.Size > 0 {
			c.execs = append(c.execs, [2]uint64{s.Addr, s.Addr + s.Size})
		}
		if s.Name == ".got" {
			c.got = [2]uint64{s.Addr, s.Addr + s.Size}
		}
	}
	if len(c.execs) == 0 && im.TextEnd > im.TextStart {
		c.execs = append(c.execs, [2]uint64{im.TextStart, im.TextEnd})
	}
	c.findProcs()
	if len(c.procs) == 0 {
		return nil, fmt.Errorf("cfg: %s: no code symbols", im.Path)
	}
	c.scan()
	return c, nil
}

func (c *Code) execSection(addr uint64) (lo, hi uint64, ok bool) {
	for _, s := range c.execs {
		if addr >= s[0] && addr < s[1] {
			return s[0], s[1], true
		}
	}
	return 0, 0, false
}

func (c *Code) findProcs() {
	syms := c.im.ProcedureSymbols() // sorted by address, best name first; a stripped library's unnamed procedures too
	var sizedEnd uint64             // end of the last sized function seen
	for _, s := range syms {
		if s.Kind == elfimage.SymObject || s.Kind == elfimage.SymTLS || s.Addr%4 != 0 {
			continue
		}
		if _, _, ok := c.execSection(s.Addr); !ok {
			continue
		}
		if n := len(c.procs); n > 0 && c.procs[n-1].Start == s.Addr {
			c.named[s.Name] = n - 1
			if s.Size > 0 && c.procs[n-1].End == 0 {
				c.procs[n-1].End = s.Addr + s.Size
			}
			continue
		}
		if s.Kind == elfimage.SymNoType && s.Addr < sizedEnd {
			continue // a label inside a function
		}
		r := Range{Name: s.Name, Start: s.Addr}
		if s.Size > 0 {
			r.End = s.Addr + s.Size
			sizedEnd = max(sizedEnd, r.End)
		}
		c.named[s.Name] = len(c.procs)
		c.procs = append(c.procs, r)
	}
	for i := range c.procs {
		r := &c.procs[i]
		_, secEnd, _ := c.execSection(r.Start)
		limit := secEnd
		if i+1 < len(c.procs) && c.procs[i+1].Start < limit {
			limit = c.procs[i+1].Start
		}
		if r.End == 0 || r.End > limit {
			r.End = limit
		}
		r.End &^= 3
	}
}

// word reads the instruction at pc from the image's file-backed bytes.
func (c *Code) word(pc uint64) (uint32, bool) {
	v, ok := c.read(pc, 4, false)
	return uint32(v), ok
}

// read reads size bytes at addr from a file-backed segment; constOnly
// limits it to what cannot change at run time: read-only segments and the
// .got of a static image.
func (c *Code) read(addr uint64, size int, constOnly bool) (uint64, bool) {
	s, ok := c.im.SegmentFor(addr)
	if !ok {
		return 0, false
	}
	if constOnly && s.Flags&elfimage.PermW != 0 && !(addr >= c.got[0] && addr+uint64(size) <= c.got[1]) {
		return 0, false
	}
	off := addr - s.Vaddr
	if off+uint64(size) > uint64(len(s.Data)) || off+uint64(size) < off {
		return 0, false
	}
	switch size {
	case 4:
		return uint64(binary.LittleEndian.Uint32(s.Data[off:])), true
	case 8:
		return binary.LittleEndian.Uint64(s.Data[off:]), true
	}
	return 0, false
}

// scan walks every instruction once: the branches and calls that enter a
// procedure past its start, and the global pointer of the prologues.
func (c *Code) scan() {
	gps := map[uint64]bool{}
	for _, r := range c.procs {
		w0, ok0 := c.word(r.Start)
		w1, ok1 := c.word(r.Start + 4)
		if ok0 && ok1 && r.End-r.Start >= 8 {
			if gp, ok := ldgp(w0, w1, 27, r.Start); ok {
				gps[gp] = true
			}
		}
		mayReturn := false
		for pc := r.Start; pc < r.End; pc += 4 {
			w, ok := c.word(pc)
			if !ok {
				mayReturn = true
				break
			}
			in := Insn{PC: pc, Word: w, Dec: alpha.Decode(w, decodeModel)}
			k, t := classify(in)
			switch {
			case k == ctlRet, k == ctlJmp, (k == ctlCond || k == ctlBr) && (t < r.Start || t >= r.End):
				mayReturn = true
			case pc+4 == r.End && k != ctlBr && k != ctlHalt:
				mayReturn = true // runs off its end
			}
			if w>>26 < 0x30 {
				continue
			}
			if t >= r.Start && t < r.End && w>>26 != 0x34 {
				continue // a branch within its own procedure
			}
			if i := c.procIndex(t); i >= 0 && c.procs[i].Start != t {
				c.alt[t] = true
			}
		}
		if !mayReturn {
			c.noret[r.Start] = true
		}
	}
	if len(gps) == 1 {
		for gp := range gps {
			c.gp, c.gpKnown = gp, true
		}
	}
}

// ldgp recognizes the gp setup "ldah gp,hi(base); lda gp,lo(gp)" with
// base (r27 at an entry) holding value.
func ldgp(w0, w1 uint32, base uint8, value uint64) (uint64, bool) {
	d0, d1 := alpha.Decode(w0, decodeModel), alpha.Decode(w1, decodeModel)
	if d0.Op != alpha.OpLDAH || d0.Ra != 29 || d0.Rb != base || d1.Op != alpha.OpLDA || d1.Ra != 29 || d1.Rb != 29 {
		return 0, false
	}
	return value + uint64(int64(d0.Imm)) + uint64(int64(d1.Imm)), true
}

// noReturn reports whether a call to addr never returns, as far as the
// callee's code shows.
func (c *Code) noReturn(addr uint64) bool { return c.noret[addr] }

// procIndex returns the procedure containing addr, or -1.
func (c *Code) procIndex(addr uint64) int {
	i := sort.Search(len(c.procs), func(i int) bool { return c.procs[i].End > addr })
	if i < len(c.procs) && c.procs[i].Start <= addr {
		return i
	}
	return -1
}

// isEntry reports whether addr starts a procedure.
func (c *Code) isEntry(addr uint64) bool {
	i := c.procIndex(addr)
	return i >= 0 && c.procs[i].Start == addr
}

// Procedures returns every procedure, in address order.
func (c *Code) Procedures() []Range { return append([]Range(nil), c.procs...) }

// GP returns the global pointer the image's procedures set up, if they
// agree on one.
func (c *Code) GP() (uint64, bool) { return c.gp, c.gpKnown }

// Lookup returns the procedure named name (any symbol name at its start).
func (c *Code) Lookup(name string) (Range, error) {
	i, ok := c.named[name]
	if !ok {
		return Range{}, fmt.Errorf("cfg: %s: %w named %q", c.im.Path, ErrNoProcedure, name)
	}
	return c.procs[i], nil
}

// At returns the procedure containing addr.
func (c *Code) At(addr uint64) (Range, error) {
	i := c.procIndex(addr)
	if i < 0 {
		return Range{}, fmt.Errorf("cfg: %s: %w at %#x", c.im.Path, ErrNoProcedure, addr)
	}
	return c.procs[i], nil
}

// BuildNamed builds the CFG of the procedure named name.
func (c *Code) BuildNamed(name string) (*Proc, error) {
	r, err := c.Lookup(name)
	if err != nil {
		return nil, err
	}
	return c.Build(r)
}

// Build builds the CFG of the instructions in [r.Start, r.End), which
// must be 4-byte aligned, non-empty and file-backed code.
func (c *Code) Build(r Range) (*Proc, error) {
	if r.Start%4 != 0 || r.End%4 != 0 || r.End <= r.Start {
		return nil, fmt.Errorf("cfg: %s: bad range [%#x, %#x): want a non-empty, 4-byte aligned range", c.im.Path, r.Start, r.End)
	}
	lo, hi, ok := c.execSection(r.Start)
	if !ok || r.End > hi || r.Start < lo {
		return nil, fmt.Errorf("cfg: %s: [%#x, %#x) is not inside one executable section", c.im.Path, r.Start, r.End)
	}
	if r.End-r.Start > 1<<24 {
		return nil, fmt.Errorf("cfg: %s: [%#x, %#x) is too large for one procedure", c.im.Path, r.Start, r.End)
	}
	p := &Proc{Name: r.Name, Start: r.Start, End: r.End}
	n := int((r.End - r.Start) / 4)
	p.Insns = make([]Insn, n)
	for i := range p.Insns {
		pc := r.Start + uint64(i)*4
		w, ok := c.word(pc)
		if !ok {
			return nil, fmt.Errorf("cfg: %s: no file bytes for the instruction at %#x", c.im.Path, pc)
		}
		p.Insns[i] = Insn{PC: pc, Word: w, Dec: alpha.Decode(w, decodeModel)}
	}
	p.Entries = append(p.Entries, r.Start)
	for pc := r.Start + 4; pc < r.End; pc += 4 {
		if c.alt[pc] {
			p.Entries = append(p.Entries, pc)
		}
	}
	b := &builder{c: c, p: p}
	b.build()
	return p, nil
}

// BuildAll builds every procedure's CFG, in address order.
func (c *Code) BuildAll() ([]*Proc, error) {
	out := make([]*Proc, 0, len(c.procs))
	for _, r := range c.procs {
		p, err := c.Build(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
