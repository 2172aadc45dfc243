package elfimage

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Call frame information: the .eh_frame section gcc emits for every
// procedure (DWARF's call frame information with GNU's encodings; LSB
// "Exception Frames" and DWARF 4 sec. 6.4), decoded into the rows a stack
// unwinder needs: where the canonical frame address is (the caller's SP),
// where the return address is, and where the caller's frame pointer is
// (Alpha's r15 for ParseEHFrame; any DWARF register for ParseFrames, such
// as x86-64's rbp or arm64's x29, since nothing here is Alpha's but that
// number). Unwinders outside hwsim compile these rows further.
//
// Supported: CIE versions 1, 3 and 4 with augmentations z, R, P, L, S and
// eh; pointer encodings absptr, udata2/4/8, sdata2/4/8, uleb/sleb128,
// pcrel and datarel... what gcc and binutils emit; and the call frame
// instructions DW_CFA_advance_loc(1/2/4), set_loc, def_cfa(_sf),
// def_cfa_register, def_cfa_offset(_sf), offset(_extended)(_sf), restore(
// _extended), undefined, same_value, register, remember_state,
// restore_state, GNU_args_size and nop. A rule the walk cannot follow (a
// DWARF expression, val_offset) makes the register's rule Unsupported, and
// a CFA expression makes the CFA's; consumers treat those rows as
// uncovered. Bad input gives an error wrapping ErrMalformed, never a panic.

// RuleKind says where a register of the caller is.
type RuleKind uint8

const (
	RuleSame        RuleKind = iota // unchanged (unspecified or DW_CFA_same_value)
	RuleUndefined                   // the caller has no value (outermost frame, for the RA)
	RuleOffset                      // saved at CFA+Offset
	RuleRegister                    // held in register Reg
	RuleUnsupported                 // an expression or a value rule
)

// RegRule is one register's rule in a row.
type RegRule struct {
	Kind   RuleKind
	Offset int64
	Reg    uint8
}

// CFARule says the canonical frame address is Reg+Offset; Expr marks a
// DWARF expression, which the rule does not describe.
type CFARule struct {
	Reg    uint8
	Offset int64
	Expr   bool
}

// FrameRow holds from Addr up to the next row's Addr (or the FDE's End).
type FrameRow struct {
	Addr uint64
	CFA  CFARule
	RA   RegRule // the rule of the CIE's return address column
	FP   RegRule // the rule of the frame pointer (r15 on Alpha)
}

// FDE is one procedure's call frame information.
type FDE struct {
	Start, End uint64 // [Start, End)
	RAColumn   uint8
	Rows       []FrameRow
}

// Limits on call frame information from outside input.
const (
	maxFDEs       = 1 << 20
	maxStateStack = 64
	maxRegs       = 65 // r0-r31, f0-f31 and column 64, the PC of signal frames
	regFP         = 15
)

// FrameInfo decodes the image's .eh_frame section, if it has one that a
// loadable segment holds (nil, nil if not). The FDEs are sorted by Start.
func (im *Image) FrameInfo() ([]FDE, error) {
	for _, s := range im.Sections {
		if s.Name != ".eh_frame" || !s.Alloc() || s.Size == 0 {
			continue
		}
		for i := range im.Segments {
			seg := &im.Segments[i]
			if s.Addr < seg.Vaddr || s.Addr-seg.Vaddr > seg.Filesz || s.Size > seg.Filesz-(s.Addr-seg.Vaddr) || seg.Filesz > uint64(len(seg.Data)) {
				continue
			}
			lo := s.Addr - seg.Vaddr
			return ParseEHFrame(seg.Data[lo:lo+s.Size], s.Addr, im.Path)
		}
		return nil, newErr(im.Path, ErrMalformed, ".eh_frame at %#x: in no loaded segment's file data", s.Addr)
	}
	return nil, nil
}

// ParseEHFrame decodes an Alpha .eh_frame section loaded at addr.
func ParseEHFrame(data []byte, addr uint64, path string) (fdes []FDE, err error) {
	return ParseFrames(data, addr, path, regFP)
}

// ParseFrames decodes an .eh_frame section loaded at addr whose rows'
// FP is the rule of DWARF register fp: the same decoder for any
// instruction set whose call frame information gcc writes this way
// (x86-64: fp 6, rbp; arm64: fp 29, x29).
func ParseFrames(data []byte, addr uint64, path string, fp uint8) (fdes []FDE, err error) {
	defer func() {
		if r := recover(); r != nil {
			fdes, err = nil, newErr(path, ErrMalformed, ".eh_frame: internal error while parsing: %v", r)
		}
	}()
	if fp >= maxRegs {
		return nil, newErr(path, ErrMalformed, ".eh_frame: frame pointer column %d", fp)
	}
	f := &ehParser{data: data, addr: addr, path: path, cies: map[uint64]*cie{}, fp: fp}
	return f.parse()
}

type cie struct {
	codeAlign uint64
	dataAlign int64
	raCol     uint64
	fdeEnc    byte
	aug       bool // 'z': FDEs have augmentation data
	initial   []byte
}

type ehParser struct {
	data []byte
	addr uint64
	path string
	cies map[uint64]*cie
	fp   uint8 // the column FrameRow.FP follows
}

func (f *ehParser) errf(format string, a ...any) error {
	return newErr(f.path, ErrMalformed, ".eh_frame: "+format, a...)
}

// cursor reads a bounded byte range.
type cursor struct {
	b   []byte
	off int // into b
	bad bool
}

func (c *cursor) u8() byte {
	if c.off >= len(c.b) {
		c.bad = true
		return 0
	}
	c.off++
	return c.b[c.off-1]
}

func (c *cursor) bytes(n uint64) []byte {
	if n > uint64(len(c.b)-c.off) {
		c.bad = true
		c.off = len(c.b)
		return nil
	}
	s := c.b[c.off : c.off+int(n)]
	c.off += int(n)
	return s
}

func (c *cursor) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b := c.u8()
		if c.bad {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b&0x80 == 0 {
			return v
		}
		if shift > 70 {
			c.bad = true
			return 0
		}
	}
}

func (c *cursor) sleb() int64 {
	var v int64
	var shift uint
	for {
		b := c.u8()
		if c.bad {
			return 0
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
		if shift > 70 {
			c.bad = true
			return 0
		}
	}
}

// ptr reads a pointer in encoding enc; at is the address the cursor's
// position has in memory (for pcrel).
func (c *cursor) ptr(enc byte, at uint64) (uint64, bool) {
	if enc == 0xff {
		return 0, false
	}
	var v uint64
	switch enc & 0x0f {
	case 0x00, 0x04:
		v = binary.LittleEndian.Uint64(pad(c.bytes(8), 8))
	case 0x01:
		v = c.uleb()
	case 0x02:
		v = uint64(binary.LittleEndian.Uint16(pad(c.bytes(2), 2)))
	case 0x03:
		v = uint64(binary.LittleEndian.Uint32(pad(c.bytes(4), 4)))
	case 0x09:
		v = uint64(c.sleb())
	case 0x0a:
		v = uint64(int64(int16(binary.LittleEndian.Uint16(pad(c.bytes(2), 2)))))
	case 0x0b:
		v = uint64(int64(int32(binary.LittleEndian.Uint32(pad(c.bytes(4), 4)))))
	case 0x0c:
		v = binary.LittleEndian.Uint64(pad(c.bytes(8), 8))
	default:
		c.bad = true
		return 0, false
	}
	switch enc & 0x70 {
	case 0x00:
	case 0x10:
		v += at
	default: // textrel, datarel, funcrel, aligned: not in static Alpha executables
		c.bad = true
		return 0, false
	}
	if enc&0x80 != 0 { // indirect: would need a memory read; not for FDE ranges
		c.bad = true
	}
	return v, !c.bad
}

func pad(b []byte, n int) []byte {
	if len(b) < n {
		return make([]byte, n)
	}
	return b
}

func (f *ehParser) parse() ([]FDE, error) {
	var fdes []FDE
	for off := uint64(0); off < uint64(len(f.data)); {
		start := off
		if uint64(len(f.data))-off < 4 {
			return nil, f.errf("record at %#x: truncated length", off)
		}
		length := uint64(binary.LittleEndian.Uint32(f.data[off:]))
		off += 4
		if length == 0 {
			break // the terminator
		}
		if length == 0xffffffff {
			if uint64(len(f.data))-off < 8 {
				return nil, f.errf("record at %#x: truncated 64-bit length", start)
			}
			length = binary.LittleEndian.Uint64(f.data[off:])
			off += 8
		}
		if length < 4 || length > uint64(len(f.data))-off {
			return nil, f.errf("record at %#x: length %d runs past the section", start, length)
		}
		body := f.data[off : off+length]
		bodyAddr := f.addr + off
		next := off + length
		id := uint64(binary.LittleEndian.Uint32(body))
		if id == 0 {
			if _, err := f.cie(start, body[4:], bodyAddr+4); err != nil {
				return nil, err
			}
		} else {
			if id > off {
				return nil, f.errf("FDE at %#x: CIE pointer %#x before the section", start, id)
			}
			ciePos := off - id
			c, ok := f.cies[ciePos]
			if !ok {
				var err error
				if c, err = f.cieAt(ciePos); err != nil {
					return nil, fmt.Errorf("FDE at %#x: %w", start, err)
				}
			}
			fde, err := f.fde(start, c, body[4:], bodyAddr+4)
			if err != nil {
				return nil, err
			}
			if fde.End > fde.Start {
				if len(fdes) >= maxFDEs {
					return nil, f.errf("more than %d FDEs", maxFDEs)
				}
				fdes = append(fdes, fde)
			}
		}
		off = next
	}
	slices.SortStableFunc(fdes, func(a, b FDE) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	return fdes, nil
}

// cieAt parses the CIE record at section offset pos (an FDE named it
// before the walk reached it).
func (f *ehParser) cieAt(pos uint64) (*cie, error) {
	if uint64(len(f.data))-pos < 8 || pos > uint64(len(f.data)) {
		return nil, f.errf("CIE at %#x: outside the section", pos)
	}
	length := uint64(binary.LittleEndian.Uint32(f.data[pos:]))
	if length == 0xffffffff || length < 4 || length > uint64(len(f.data))-pos-4 {
		return nil, f.errf("CIE at %#x: bad length", pos)
	}
	body := f.data[pos+4 : pos+4+length]
	if binary.LittleEndian.Uint32(body) != 0 {
		return nil, f.errf("record at %#x: not a CIE", pos)
	}
	return f.cie(pos, body[4:], f.addr+pos+8)
}

func (f *ehParser) cie(pos uint64, b []byte, at uint64) (*cie, error) {
	if c, ok := f.cies[pos]; ok {
		return c, nil
	}
	cur := &cursor{b: b}
	version := cur.u8()
	if version != 1 && version != 3 && version != 4 {
		return nil, f.errf("CIE at %#x: version %d", pos, version)
	}
	var aug []byte
	for {
		ch := cur.u8()
		if cur.bad {
			return nil, f.errf("CIE at %#x: unterminated augmentation", pos)
		}
		if ch == 0 {
			break
		}
		aug = append(aug, ch)
	}
	c := &cie{fdeEnc: 0} // absptr unless 'R' says otherwise
	if len(aug) >= 2 && aug[0] == 'e' && aug[1] == 'h' {
		cur.bytes(8)
		aug = aug[2:]
	}
	if version == 4 {
		cur.u8() // address size
		cur.u8() // segment selector size
	}
	c.codeAlign = cur.uleb()
	c.dataAlign = cur.sleb()
	if version == 1 {
		c.raCol = uint64(cur.u8())
	} else {
		c.raCol = cur.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.aug = true
		n := cur.uleb()
		data := cur.bytes(n)
		ac := &cursor{b: data}
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				c.fdeEnc = ac.u8()
			case 'L':
				ac.u8()
			case 'P':
				enc := ac.u8()
				ac.ptr(enc&0x7f, 0) // personality: skipped (its value does not matter)
			case 'S', 'B':
			default:
				ac.off = len(ac.b) // unknown: 'z' lets us skip the rest
			}
			if ac.bad {
				return nil, f.errf("CIE at %#x: augmentation data", pos)
			}
		}
	} else if len(aug) > 0 {
		return nil, f.errf("CIE at %#x: augmentation %q without 'z'", pos, aug)
	}
	if cur.bad {
		return nil, f.errf("CIE at %#x: truncated", pos)
	}
	if c.codeAlign == 0 || c.raCol >= maxRegs {
		return nil, f.errf("CIE at %#x: code alignment %d, return address column %d", pos, c.codeAlign, c.raCol)
	}
	c.initial = cur.b[cur.off:]
	f.cies[pos] = c
	return c, nil
}

func (f *ehParser) fde(pos uint64, c *cie, b []byte, at uint64) (FDE, error) {
	cur := &cursor{b: b}
	start, ok := cur.ptr(c.fdeEnc, at)
	if !ok {
		return FDE{}, f.errf("FDE at %#x: pc_begin (encoding %#x)", pos, c.fdeEnc)
	}
	n, ok := cur.ptr(c.fdeEnc&0x0f, 0)
	if !ok {
		return FDE{}, f.errf("FDE at %#x: pc_range", pos)
	}
	if start+n < start {
		return FDE{}, f.errf("FDE at %#x: range [%#x, +%#x) wraps", pos, start, n)
	}
	if c.aug {
		cur.bytes(cur.uleb())
	}
	if cur.bad {
		return FDE{}, f.errf("FDE at %#x: truncated", pos)
	}
	fde := FDE{Start: start, End: start + n, RAColumn: uint8(c.raCol)}
	st := cfaState{fp: f.fp}
	if err := st.run(c, c.initial, start, nil); err != nil {
		return FDE{}, f.errf("CIE of FDE at %#x: %v", pos, err)
	}
	initial := st.regs
	st.rows = []FrameRow{st.row(c, start)}
	if err := st.run(c, cur.b[cur.off:], start, &initial); err != nil {
		return FDE{}, f.errf("FDE at %#x: %v", pos, err)
	}
	// Rows at or past End, and rows replaced at the same address, go.
	rows := st.rows[:0]
	for _, r := range st.rows {
		if r.Addr >= fde.End {
			break
		}
		if k := len(rows); k > 0 && rows[k-1].Addr == r.Addr {
			rows[k-1] = r
			continue
		}
		rows = append(rows, r)
	}
	fde.Rows = slices.Clip(rows)
	return fde, nil
}

// cfaState is the call frame instructions' machine.
type cfaState struct {
	cfa   CFARule
	regs  [maxRegs]RegRule
	stack []savedState
	loc   uint64
	rows  []FrameRow
	fp    uint8
}

type savedState struct {
	cfa  CFARule
	regs [maxRegs]RegRule
}

func (s *cfaState) row(c *cie, at uint64) FrameRow {
	return FrameRow{Addr: at, CFA: s.cfa, RA: s.regs[c.raCol], FP: s.regs[s.fp]}
}

// run executes instructions from loc; initial is the CIE's rules, for
// DW_CFA_restore (nil while running the CIE's own instructions).
func (s *cfaState) run(c *cie, ins []byte, loc uint64, initial *[maxRegs]RegRule) error {
	s.loc = loc
	cur := &cursor{b: ins}
	advance := func(delta uint64) error {
		d := delta * c.codeAlign
		if c.codeAlign != 0 && d/c.codeAlign != delta || s.loc+d < s.loc {
			return fmt.Errorf("advance by %d overflows", delta)
		}
		s.loc += d
		if s.rows != nil {
			s.rows = append(s.rows, s.row(c, s.loc))
		}
		return nil
	}
	set := func(reg uint64, r RegRule) {
		if reg < maxRegs {
			s.regs[reg] = r
		}
	}
	restore := func(reg uint64) {
		if reg < maxRegs {
			if initial != nil {
				s.regs[reg] = initial[reg]
			} else {
				s.regs[reg] = RegRule{}
			}
		}
	}
	// Every instruction that changes a rule rewrites the current row.
	for cur.off < len(cur.b) && !cur.bad {
		op := cur.u8()
		var err error
		switch hi, lo := op>>6, uint64(op&0x3f); hi {
		case 1:
			err = advance(lo)
		case 2:
			set(lo, RegRule{Kind: RuleOffset, Offset: int64(cur.uleb()) * c.dataAlign})
		case 3:
			restore(lo)
		default:
			switch op {
			case 0x00: // nop
			case 0x01: // set_loc
				v, ok := cur.ptr(c.fdeEnc, 0)
				if !ok || v < s.loc {
					return fmt.Errorf("set_loc")
				}
				s.loc = v
				if s.rows != nil {
					s.rows = append(s.rows, s.row(c, s.loc))
				}
			case 0x02:
				err = advance(uint64(cur.u8()))
			case 0x03:
				err = advance(uint64(binary.LittleEndian.Uint16(pad(cur.bytes(2), 2))))
			case 0x04:
				err = advance(uint64(binary.LittleEndian.Uint32(pad(cur.bytes(4), 4))))
			case 0x05:
				reg := cur.uleb()
				set(reg, RegRule{Kind: RuleOffset, Offset: int64(cur.uleb()) * c.dataAlign})
			case 0x06:
				restore(cur.uleb())
			case 0x07:
				set(cur.uleb(), RegRule{Kind: RuleUndefined})
			case 0x08:
				set(cur.uleb(), RegRule{Kind: RuleSame})
			case 0x09:
				reg, r2 := cur.uleb(), cur.uleb()
				rule := RegRule{Kind: RuleRegister, Reg: uint8(r2)}
				if r2 >= maxRegs {
					rule = RegRule{Kind: RuleUnsupported}
				}
				set(reg, rule)
			case 0x0a:
				if len(s.stack) >= maxStateStack {
					return fmt.Errorf("remember_state nested deeper than %d", maxStateStack)
				}
				s.stack = append(s.stack, savedState{cfa: s.cfa, regs: s.regs})
			case 0x0b:
				if len(s.stack) == 0 {
					return fmt.Errorf("restore_state with nothing remembered")
				}
				top := s.stack[len(s.stack)-1]
				s.stack = s.stack[:len(s.stack)-1]
				s.cfa, s.regs = top.cfa, top.regs
			case 0x0c:
				reg, off := cur.uleb(), cur.uleb()
				s.cfa = CFARule{Reg: uint8(min(reg, 255)), Offset: int64(off)}
			case 0x0d:
				s.cfa.Reg, s.cfa.Expr = uint8(min(cur.uleb(), 255)), false
			case 0x0e:
				s.cfa.Offset, s.cfa.Expr = int64(cur.uleb()), false
			case 0x0f: // def_cfa_expression
				cur.bytes(cur.uleb())
				s.cfa = CFARule{Expr: true}
			case 0x10: // expression
				reg := cur.uleb()
				cur.bytes(cur.uleb())
				set(reg, RegRule{Kind: RuleUnsupported})
			case 0x11:
				reg := cur.uleb()
				set(reg, RegRule{Kind: RuleOffset, Offset: cur.sleb() * c.dataAlign})
			case 0x12:
				reg := cur.uleb()
				s.cfa = CFARule{Reg: uint8(min(reg, 255)), Offset: cur.sleb() * c.dataAlign}
			case 0x13:
				s.cfa.Offset, s.cfa.Expr = cur.sleb()*c.dataAlign, false
			case 0x14, 0x15: // val_offset(_sf)
				reg := cur.uleb()
				if op == 0x14 {
					cur.uleb()
				} else {
					cur.sleb()
				}
				set(reg, RegRule{Kind: RuleUnsupported})
			case 0x16: // val_expression
				reg := cur.uleb()
				cur.bytes(cur.uleb())
				set(reg, RegRule{Kind: RuleUnsupported})
			case 0x2e: // GNU_args_size
				cur.uleb()
			case 0x2d: // AARCH64_negate_ra_state (SPARC's GNU_window_save): arm64's
				// pointer authentication signs the saved return address; the
				// walk strips the signature, so the rule changes nothing here
				// (Alpha's and x86-64's gcc never emit it)
			case 0x2f: // GNU_negative_offset_extended
				reg := cur.uleb()
				set(reg, RegRule{Kind: RuleOffset, Offset: -int64(cur.uleb()) * c.dataAlign})
			default:
				return fmt.Errorf("call frame instruction %#x", op)
			}
		}
		if err != nil {
			return err
		}
		if s.rows != nil && !advances(op) {
			s.rows[len(s.rows)-1] = s.row(c, s.rows[len(s.rows)-1].Addr)
		}
	}
	if cur.bad {
		return fmt.Errorf("truncated call frame instructions")
	}
	return nil
}

func advances(op byte) bool {
	return op>>6 == 1 || op == 0x01 || op == 0x02 || op == 0x03 || op == 0x04
}
