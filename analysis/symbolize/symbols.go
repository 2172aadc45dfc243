package symbolize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"sync"

	"dcpi/analysis"
	"dcpi/hwsim/alpha"
	"dcpi/storage"
	"dcpi/wire"
)

// UnknownProcedure names the row of an image's samples that no symbol
// covers — offsets before the first symbol, in the padding after a sized
// one, past the last, or in an image whose record has no symbols or was
// never uploaded. It is one row per image, not one per offset, as DCPI's
// tools named it.
const UnknownProcedure = "unknown_rtn"

// LoadBase is the address that offset 0 of rec's image stands for.
//
// The node reports a sample as its PC minus the base of the image's
// mapping (node.ImageMaps.Resolve), and the loader maps an image at the
// page-aligned address of its first PT_LOAD segment (hwsim.loadSegments;
// vmunix's first segment is page-aligned too). Version 2 records carry that
// base; for version 1 it is inferred as the page containing TextStart: true
// when .text lies in the first page of the first segment, as in every image
// the simulator runs (the ELF and program headers precede it there).
func LoadBase(rec *wire.ImageRecord) uint64 {
	if rec.Version >= 2 {
		return rec.Base
	}
	return rec.TextStart &^ (alpha.PageSize - 1)
}

// Table maps the offsets of one image to its procedures.
//
// A symbol with a size covers [Addr, Addr+Size); when sized symbols nest or
// overlap the innermost one wins (the greatest Addr, then the smallest
// Size). A symbol of size zero (an assembler routine without .size, or a
// bare label such as _start) covers from its address up to the next symbol
// at a higher address, or to the end of .text after the last one, and only
// where no sized symbol covers. Addresses in the padding after a sized
// symbol belong to none. These are hwsim/elfimage's Lookup rules, less the
// symbol kinds and binding the uploaded record does not carry: every
// zero-size symbol counts as a procedure entry.
type Table struct {
	Path string
	Base uint64 // LoadBase of the record

	syms   []wire.Symbol // sorted by Addr, then record order
	end    []uint64      // first address syms[i] does not cover
	maxEnd []uint64      // max(end[0..i]), to stop backward scans early
	sized  []bool
}

// NewTable indexes rec's symbols. It does not modify rec.
func NewTable(rec *wire.ImageRecord) *Table {
	t := &Table{Path: rec.Path, Base: LoadBase(rec)}
	t.syms = slices.Clone(rec.Symbols)
	slices.SortStableFunc(t.syms, func(a, b wire.Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
	n := len(t.syms)
	t.end, t.maxEnd, t.sized = make([]uint64, n), make([]uint64, n), make([]bool, n)
	next := uint64(0) // the next higher symbol address; 0 = none
	for hi := n; hi > 0; {
		lo := hi - 1
		for lo > 0 && t.syms[lo-1].Addr == t.syms[hi-1].Addr {
			lo--
		}
		for i := lo; i < hi; i++ {
			s := &t.syms[i]
			switch {
			case s.Size > 0:
				t.sized[i] = true
				t.end[i] = s.Addr + s.Size
				if t.end[i] < s.Addr {
					t.end[i] = ^uint64(0) // saturate
				}
			case next != 0:
				t.end[i] = next
			case rec.TextEnd > s.Addr:
				t.end[i] = rec.TextEnd
			default:
				t.end[i] = s.Addr // covers nothing
			}
		}
		next = t.syms[lo].Addr
		hi = lo
	}
	var m uint64
	for i := range t.end {
		m = max(m, t.end[i])
		t.maxEnd[i] = m
	}
	return t
}

// Len is the number of symbols.
func (t *Table) Len() int { return len(t.syms) }

// Symbols yields each symbol with its index, in address order.
func (t *Table) Symbols() iter.Seq2[int, wire.Symbol] { return slices.All(t.syms) }

// Symbol is symbol i in address order (0 <= i < Len()).
func (t *Table) Symbol(i int) wire.Symbol { return t.syms[i] }

// End is the first address symbol i does not cover, by the rules above
// (its size, or the next symbol's address for a symbol of size zero).
func (t *Table) End(i int) uint64 { return t.end[i] }

// Lookup returns the symbol covering offset (from the image's load
// address), its index in the table's address order (for callers that
// group by symbol), and false if no symbol covers it.
func (t *Table) Lookup(offset uint64) (sym wire.Symbol, index int, ok bool) {
	i, _, ok := t.Index(offset)
	if !ok {
		return wire.Symbol{}, -1, false
	}
	return t.syms[i], i, true
}

// LookupRun is Lookup returning, as well, the offset up to which
// (exclusive) every offset from this one has the same answer (see Index):
// a caller walking offsets in ascending order looks up once per run.
func (t *Table) LookupRun(offset uint64) (sym wire.Symbol, until uint64, ok bool) {
	i, until, ok := t.Index(offset)
	if !ok {
		return wire.Symbol{}, until, false
	}
	return t.syms[i], until, true
}

// Index is Lookup by index: the index in address order of the symbol
// covering offset (Symbol(i) is it), and, as well, the offset up to which
// (exclusive) every offset from this one has the same answer: the next
// symbol's start or the end of the symbol found, whichever is first. A
// caller walking offsets in ascending order looks up once per run, and one
// grouping rows by symbol keys them by the index.
func (t *Table) Index(offset uint64) (index int, until uint64, ok bool) {
	addr := t.Base + offset
	if addr < t.Base {
		return -1, ^uint64(0), false // wrapped: past any address
	}
	syms := t.syms
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > addr }) - 1
	next := ^uint64(0)
	if i+1 < len(syms) {
		next = syms[i+1].Addr
	}
	best := -1
	for j := i; j >= 0 && t.maxEnd[j] > addr; j-- {
		if addr >= t.end[j] {
			continue
		}
		if best < 0 || t.better(j, best) {
			best = j
		}
	}
	if best >= 0 {
		next = min(next, t.end[best])
	}
	// Back to offsets; an address past the wrap point stands for "never".
	until = ^uint64(0)
	if next-t.Base > offset {
		until = next - t.Base
	}
	return best, until, best >= 0
}

// better reports whether symbol j, at or below best in address order,
// should replace best as the symbol covering an address both cover.
func (t *Table) better(j, best int) bool {
	a, b := &t.syms[j], &t.syms[best]
	if t.sized[j] != t.sized[best] {
		return t.sized[j]
	}
	if !t.sized[j] {
		// Zero-size symbols covering one address share it: the first
		// in the record is the preferred alias.
		return a.Addr == b.Addr
	}
	if a.Addr != b.Addr {
		return false // best is the inner one
	}
	if a.Size != b.Size {
		return a.Size < b.Size
	}
	return true // same extent: the earlier in record order
}

// Symbolizer caches a Table per image over an analysis.Source. It is
// itself a Source (Image results are cached; Profile passes through), so wrapping a
// Source in one and passing it to several analyses shares the cache. Images
// are content-addressed, so a cached record never goes stale (only the
// path a later node found the same file under can differ). Safe for
// concurrent use.
type Symbolizer struct {
	src analysis.Source

	mu     sync.Mutex
	tables map[wire.ImageKey]*imageEntry
}

type imageEntry struct {
	rec   *wire.ImageRecord // nil when not uploaded
	table *Table
}

// New wraps src; if src is already a Symbolizer it is returned.
func New(src analysis.Source) *Symbolizer {
	if s, ok := src.(*Symbolizer); ok {
		return s
	}
	return &Symbolizer{src: src, tables: map[wire.ImageKey]*imageEntry{}}
}

// Profile passes through to the wrapped Source.
func (s *Symbolizer) Profile(ctx context.Context, q storage.Query, fn func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error) error {
	return s.src.Profile(ctx, q, fn)
}

// Image returns the wrapped Source's record for key, cached.
func (s *Symbolizer) Image(ctx context.Context, key wire.ImageKey) (*wire.ImageRecord, error) {
	e, err := s.entry(ctx, key)
	if err != nil {
		return nil, err
	}
	if e.rec == nil {
		return nil, fmt.Errorf("analysis: image %v: %w", key, storage.ErrNotFound)
	}
	return e.rec, nil
}

// Table returns key's symbol table. An image that was never uploaded gets
// an empty table whose Path is the key's string form, so its samples still
// show, as UnknownProcedure of that key; any other error from the Source
// is returned.
func (s *Symbolizer) Table(ctx context.Context, key wire.ImageKey) (*Table, error) {
	e, err := s.entry(ctx, key)
	if err != nil {
		return nil, err
	}
	return e.table, nil
}

func (s *Symbolizer) entry(ctx context.Context, key wire.ImageKey) (*imageEntry, error) {
	s.mu.Lock()
	e, ok := s.tables[key]
	s.mu.Unlock()
	if ok {
		return e, nil
	}
	rec, err := s.src.Image(ctx, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		e = &imageEntry{table: &Table{Path: key.String()}}
	case err != nil:
		return nil, fmt.Errorf("analysis: symbols of image %v: %w", key, err)
	default:
		e = &imageEntry{rec: rec, table: NewTable(rec)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.tables[key]; ok {
		return prev, nil
	}
	s.tables[key] = e
	return e, nil
}

// Stacks passes through to the wrapped Source, when it holds stacks.
func (s *Symbolizer) Stacks(ctx context.Context, q storage.Query, fn func(st *storage.Stack, event uint8, host string, count uint64) error) error {
	return analysis.Stacks(ctx, s.src, q, fn)
}
