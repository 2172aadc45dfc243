package symbolize

import (
	"bytes"
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"slices"
	"sort"
)

// An image's source view for pprof: the line table (readLines) and the
// tree of procedures and the inlined copies of procedures in them (DWARF's
// DW_TAG_subprogram and DW_TAG_inlined_subroutine), so that an instruction
// of a procedure inlined into another is reported as pprof expects: a
// location with one Line per frame, the inlined procedure first, each
// outer frame at the call site DWARF records for the inner one.

// SourceFunc is a procedure as DWARF declares it.
type SourceFunc struct {
	Name     string // DW_AT_name
	Linkage  string // DW_AT_linkage_name, "" when none (C)
	File     string // DW_AT_decl_file
	Line     int    // DW_AT_decl_line
	resolved bool
}

// SourceFrame is one frame of an instruction's inlining chain.
type SourceFrame struct {
	Func *SourceFunc // nil: no DWARF scope covers the instruction
	File string
	Line int
}

// sourceScope is a subprogram or an inlined subroutine with code.
type sourceScope struct {
	fn       *SourceFunc
	origin   dwarf.Offset // the DIE naming it (itself, or its abstract origin)
	ranges   [][2]uint64
	callFile string // where the parent scope calls it (inlined only)
	callLine int
	children []int32 // inlined subroutines directly inside it
}

// ImageSource is an image's DWARF as pprof export reads it.
type ImageSource struct {
	lines  []lineRow
	scopes []sourceScope
	tops   []scopeRange // the subprograms' ranges, by lo
}

type scopeRange struct {
	lo, hi uint64
	scope  int32
}

// maxInlineDepth bounds the chain of one instruction (a malformed tree
// could otherwise claim any depth).
const maxInlineDepth = 64

// ReadImageSource reads the line table and the inlining tree of an ELF image.
// A file without DWARF gives an empty ImageSource and no error; a damaged
// inlining tree is an error, with the line table still returned.
func ReadImageSource(data []byte) (s *ImageSource, err error) {
	s = &ImageSource{}
	if s.lines, err = readLines(data); err != nil {
		return s, err
	}
	if len(s.lines) == 0 {
		return s, nil
	}
	defer func() {
		// debug/dwarf reads outside input; see readLines.
		if r := recover(); r != nil {
			s.scopes, s.tops = nil, nil
			err = fmt.Errorf("dwarf: malformed: %v", r)
		}
	}()
	if err := s.readScopes(data); err != nil {
		s.scopes, s.tops = nil, nil
		return s, err
	}
	return s, nil
}

func (s *ImageSource) readScopes(data []byte) error {
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer ef.Close()
	d, err := ef.DWARF()
	if err != nil {
		return fmt.Errorf("dwarf: %w", err)
	}
	funcs := map[dwarf.Offset]*SourceFunc{} // every DIE that names a procedure
	origins := map[dwarf.Offset]dwarf.Offset{}
	var files []*dwarf.LineFile
	fileName := func(v any) string {
		i, ok := v.(int64)
		if !ok || i < 0 || i >= int64(len(files)) || files[i] == nil {
			return ""
		}
		return files[i].Name
	}
	// stack holds, per open DIE with children, the scope it is (or the
	// nearest enclosing scope, for lexical blocks and the like; -1 none).
	var stack []int32
	r := d.Reader()
	var prev dwarf.Offset
	first, opened, nulls := true, 0, 0
	for {
		e, err := r.Next()
		if err != nil {
			return fmt.Errorf("dwarf: %w", err)
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			// A null entry closes a list of children (debug/dwarf gives
			// it offset 0). Each must close one that was opened: a
			// damaged unit can yield null entries forever (see
			// readLines).
			if nulls++; nulls > opened {
				return fmt.Errorf("dwarf: malformed: more null entries than lists of children after %#x", prev)
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if !first && e.Offset <= prev {
			return fmt.Errorf("dwarf: malformed: entry at %#x after one at %#x", e.Offset, prev)
		}
		first, prev = false, e.Offset
		if e.Children {
			opened++
		}
		parent := int32(-1)
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		self := parent
		switch e.Tag {
		case dwarf.TagCompileUnit, dwarf.TagPartialUnit:
			stack, parent, self = stack[:0], -1, -1
			files = nil
			if lr, err := d.LineReader(e); err == nil && lr != nil {
				files = lr.Files()
			}
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			fn := &SourceFunc{File: fileName(e.Val(dwarf.AttrDeclFile))}
			fn.Name, _ = e.Val(dwarf.AttrName).(string)
			fn.Linkage, _ = e.Val(dwarf.AttrLinkageName).(string)
			if l, ok := e.Val(dwarf.AttrDeclLine).(int64); ok {
				fn.Line = int(l)
			}
			funcs[e.Offset] = fn
			for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
				if o, ok := e.Val(a).(dwarf.Offset); ok {
					origins[e.Offset] = o
					break
				}
			}
			ranges, err := d.Ranges(e)
			if err != nil || len(ranges) == 0 {
				break // a declaration or abstract instance: names only
			}
			if e.Tag == dwarf.TagInlinedSubroutine && parent < 0 {
				break // inlined into nothing: malformed, ignore
			}
			sc := sourceScope{origin: e.Offset, ranges: ranges}
			if e.Tag == dwarf.TagInlinedSubroutine {
				sc.callFile = fileName(e.Val(dwarf.AttrCallFile))
				if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
					sc.callLine = int(l)
				}
			}
			self = int32(len(s.scopes))
			s.scopes = append(s.scopes, sc)
			if e.Tag == dwarf.TagInlinedSubroutine {
				s.scopes[parent].children = append(s.scopes[parent].children, self)
			} else {
				for _, rg := range ranges {
					if rg[1] > rg[0] {
						s.tops = append(s.tops, scopeRange{rg[0], rg[1], self})
					}
				}
			}
		}
		if e.Children {
			stack = append(stack, self)
		}
	}
	// A scope is named by the end of its abstract-origin / specification
	// chain: the fields it lacks come from the DIEs it refers to.
	var resolve func(o dwarf.Offset, depth int) *SourceFunc
	resolve = func(o dwarf.Offset, depth int) *SourceFunc {
		fn := funcs[o]
		if fn == nil || fn.resolved || depth > 8 {
			return fn
		}
		fn.resolved = true
		if next, ok := origins[o]; ok {
			if of := resolve(next, depth+1); of != nil {
				fn.Name = cmp.Or(fn.Name, of.Name)
				fn.Linkage = cmp.Or(fn.Linkage, of.Linkage)
				if fn.File == "" {
					fn.File, fn.Line = of.File, of.Line
				}
			}
		}
		return fn
	}
	for i := range s.scopes {
		s.scopes[i].fn = resolve(s.scopes[i].origin, 0)
	}
	slices.SortFunc(s.tops, func(a, b scopeRange) int { return cmp.Compare(a.lo, b.lo) })
	return nil
}

// HasLines reports whether the image has DWARF line information.
func (s *ImageSource) HasLines() bool { return s != nil && len(s.lines) > 0 }

// frames appends to out the source frames of the instruction at addr,
// innermost first: the line table's position in the innermost inlined
// procedure, then each enclosing procedure at its call site, out to the
// procedure the code was compiled into. Without a scope it gives the line
// table's position alone (Func nil); without either, nothing.
func (s *ImageSource) Frames(addr uint64, out []SourceFrame) []SourceFrame {
	file, line, ok := lookupLine(s.lines, addr)
	if !ok {
		file, line = "", 0
	}
	top := s.Top(addr)
	if top < 0 {
		if ok {
			out = append(out, SourceFrame{File: file, Line: line})
		}
		return out
	}
	// The chain from the subprogram down to the innermost scope.
	var chain [maxInlineDepth]int32
	n := 0
	chain[n], n = top, 1
	for n < maxInlineDepth {
		next := int32(-1)
		for _, c := range s.scopes[chain[n-1]].children {
			if rangesContain(s.scopes[c].ranges, addr) {
				next = c
				break
			}
		}
		if next < 0 {
			break
		}
		chain[n], n = next, n+1
	}
	for i := n - 1; i >= 0; i-- {
		sc := &s.scopes[chain[i]]
		out = append(out, SourceFrame{Func: sc.fn, File: file, Line: line})
		file, line = sc.callFile, sc.callLine
	}
	return out
}

// top is the subprogram scope covering addr, -1 none.
func (s *ImageSource) Top(addr uint64) int32 {
	i := sort.Search(len(s.tops), func(i int) bool { return s.tops[i].lo > addr }) - 1
	// Subprograms do not overlap in a well-formed image; look back a few
	// in case one does (a nested or duplicated range).
	for j := i; j >= 0 && j > i-4; j-- {
		if addr < s.tops[j].hi {
			return s.tops[j].scope
		}
	}
	return -1
}

func rangesContain(ranges [][2]uint64, addr uint64) bool {
	for _, r := range ranges {
		if addr >= r[0] && addr < r[1] {
			return true
		}
	}
	return false
}
