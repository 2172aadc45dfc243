package alpha

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Page geometry: Alpha Linux uses 8 KB pages.
const (
	PageShift    = 13
	PageSize     = 1 << PageShift
	pageMask     = PageSize - 1
	wordsPerPage = PageSize / 8
	insnsPerPage = PageSize / 4
)

// Perm is a page's access permission.
type Perm uint8

// Page permissions.
const (
	PermR Perm = 1 << iota
	PermW
	PermX
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

// codePage is a page's instructions, decoded once for one CPU model.
type codePage struct {
	model string
	insn  [insnsPerPage]Decoded
}

// Page is one 8 KB page of simulated memory. It holds 64-bit words rather
// than bytes so that aligned loads and stores, nearly all of them, are one
// array access with no byte assembly and no endianness dependence on the
// host.
type Page struct {
	W    [wordsPerPage]uint64
	perm Perm
	// refs counts the address spaces that map this page. A page with refs
	// > 1 is shared copy-on-write after fork and is copied on first write.
	refs atomic.Int32
	// code is the page decoded as instructions, built on first execution
	// and dropped by any store to the page (self-modifying code must then
	// run IMB, as on hardware, before it is guaranteed to see the change).
	code atomic.Pointer[codePage]
	// frame is the page's physical frame number, for the caches'
	// physical indexing.
	frame uint64
}

// Frames hands out physical frame numbers for one machine's memory, so
// that cache indexing, and with it timing, depends only on what that
// machine did.
type Frames struct{ next atomic.Uint64 }

func (f *Frames) newPage(perm Perm) *Page {
	p := &Page{perm: perm, frame: f.next.Add(1)}
	p.refs.Store(1)
	return p
}

// ErrFault is wrapped by errors about unmapped or protected addresses.
var ErrFault = errors.New("memory fault")

// AddressSpace is a process's virtual memory: a sparse set of pages.
type AddressSpace struct {
	pages  pageTable
	frames *Frames
	// gen changes whenever a mapping is removed, replaced or loses write
	// permission, so CPUs know to discard their cached translations.
	gen uint64
}

// NewAddressSpace returns an empty address space.
func NewAddressSpace() *AddressSpace {
	return NewAddressSpaceIn(new(Frames))
}

// NewAddressSpaceIn returns an empty address space whose pages take their
// frames from f.
func NewAddressSpaceIn(f *Frames) *AddressSpace {
	return &AddressSpace{gen: 1, frames: f}
}

// Map creates zero-filled pages covering [addr, addr+size) with perm.
// Pages already mapped in the range get perm and keep their contents.
func (as *AddressSpace) Map(addr, size uint64, perm Perm) {
	for vpn := addr >> PageShift; vpn < (addr+size+pageMask)>>PageShift && vpn < VPNLimit; vpn++ {
		if p := as.pages.get(vpn); p != nil {
			as.setPerm(vpn, p, perm)
			continue
		}
		as.pages.set(vpn, as.frames.newPage(perm))
	}
}

func (as *AddressSpace) setPerm(vpn uint64, p *Page, perm Perm) {
	if p.perm == perm {
		return
	}
	if p.refs.Load() > 1 {
		p = as.privatize(vpn, p)
	}
	p.perm = perm
	as.gen++
}

// Unmap removes every page in [addr, addr+size).
func (as *AddressSpace) Unmap(addr, size uint64) {
	for vpn := addr >> PageShift; vpn < (addr+size+pageMask)>>PageShift; vpn++ {
		if p := as.pages.get(vpn); p != nil {
			p.refs.Add(-1)
			as.pages.set(vpn, nil)
		}
	}
	as.gen++
}

// Protect changes the permission of the mapped pages in [addr, addr+size)
// and reports whether every page in the range was mapped.
func (as *AddressSpace) Protect(addr, size uint64, perm Perm) bool {
	all := true
	for vpn := addr >> PageShift; vpn < (addr+size+pageMask)>>PageShift; vpn++ {
		p := as.pages.get(vpn)
		if p == nil {
			all = false
			continue
		}
		as.setPerm(vpn, p, perm)
	}
	return all
}

// Mapped reports whether the page holding addr is mapped.
func (as *AddressSpace) Mapped(addr uint64) bool {
	return as.pages.get(addr>>PageShift) != nil
}

// PageCount returns the number of mapped pages.
func (as *AddressSpace) PageCount() int { return as.pages.count }

// Fork returns a copy-on-write copy of the address space: both share every
// page until one of them writes it.
func (as *AddressSpace) Fork() *AddressSpace {
	child := &AddressSpace{gen: 1, frames: as.frames}
	as.pages.each(func(vpn uint64, p *Page) {
		p.refs.Add(1)
		child.pages.set(vpn, p)
	})
	// The parent's CPUs may hold write translations to pages now shared.
	as.gen++
	return child
}

// Release drops every page, as when a process exits or execs.
func (as *AddressSpace) Release() {
	as.pages.each(func(vpn uint64, p *Page) { p.refs.Add(-1) })
	as.pages = pageTable{}
	as.gen++
}

// privatize gives this address space its own copy of a shared page.
func (as *AddressSpace) privatize(vpn uint64, p *Page) *Page {
	q := &Page{W: p.W, perm: p.perm, frame: as.frames.next.Add(1)}
	q.refs.Store(1)
	if c := p.code.Load(); c != nil {
		q.code.Store(c) // same bytes, same decoding
	}
	p.refs.Add(-1)
	as.pages.set(vpn, q)
	as.gen++
	return q
}

// page returns the page for vpn, or nil.
func (as *AddressSpace) page(vpn uint64) *Page { return as.pages.get(vpn) }

// writablePage returns the page for vpn ready for a store: mapped writable,
// private, with no stale decoded instructions. write reports a permission
// failure as ok=false.
func (as *AddressSpace) writablePage(vpn uint64) (*Page, bool) {
	p := as.pages.get(vpn)
	if p == nil || p.perm&PermW == 0 {
		return nil, false
	}
	if p.refs.Load() > 1 {
		p = as.privatize(vpn, p)
	}
	return p, true
}

// ReadBytes copies memory at addr into b, ignoring permissions (the
// kernel's view). It fails if any page is unmapped.
func (as *AddressSpace) ReadBytes(addr uint64, b []byte) error {
	for i := range b {
		a := addr + uint64(i)
		p := as.pages.get(a >> PageShift)
		if p == nil {
			return fmt.Errorf("read %#x: %w: unmapped", a, ErrFault)
		}
		b[i] = pageByte(p, a)
	}
	return nil
}

// Read8 loads the aligned quadword at addr, ignoring permissions, for an
// observer such as a profiler's stack walk: ok is false, and nothing
// faults, if addr is unaligned or its page is not mapped.
func (as *AddressSpace) Read8(addr uint64) (v uint64, ok bool) {
	if addr&7 != 0 {
		return 0, false
	}
	p := as.pages.get(addr >> PageShift)
	if p == nil {
		return 0, false
	}
	return p.W[(addr&pageMask)>>3], true
}

// WriteBytes copies b to memory at addr, ignoring write permission (the
// kernel's and loader's view) but not mapping: every page must exist.
func (as *AddressSpace) WriteBytes(addr uint64, b []byte) error {
	for i := 0; i < len(b); {
		a := addr + uint64(i)
		vpn := a >> PageShift
		p := as.pages.get(vpn)
		if p == nil {
			return fmt.Errorf("write %#x: %w: unmapped", a, ErrFault)
		}
		if p.refs.Load() > 1 {
			p = as.privatize(vpn, p)
		}
		p.code.Store(nil)
		for ; i < len(b) && (addr+uint64(i))>>PageShift == vpn; i++ {
			setPageByte(p, addr+uint64(i), b[i])
		}
	}
	return nil
}

// ReadString reads a NUL-terminated string of at most max bytes.
func (as *AddressSpace) ReadString(addr uint64, max int) (string, error) {
	var b []byte
	for i := 0; i < max; i++ {
		a := addr + uint64(i)
		p := as.pages.get(a >> PageShift)
		if p == nil {
			return "", fmt.Errorf("read string %#x: %w: unmapped", a, ErrFault)
		}
		c := pageByte(p, a)
		if c == 0 {
			return string(b), nil
		}
		b = append(b, c)
	}
	return "", fmt.Errorf("read string %#x: longer than %d bytes", addr, max)
}

// Regions returns the mapped ranges, merged where contiguous with equal
// permissions, in address order (for /proc-style dumps and tests).
func (as *AddressSpace) Regions() []Region {
	var rs []Region
	as.pages.each(func(vpn uint64, p *Page) {
		if n := len(rs); n > 0 && rs[n-1].End == vpn<<PageShift && rs[n-1].Perm == p.perm {
			rs[n-1].End += PageSize
			return
		}
		rs = append(rs, Region{Start: vpn << PageShift, End: (vpn + 1) << PageShift, Perm: p.perm})
	})
	return rs
}

// Region is a range of mapped memory.
type Region struct {
	Start, End uint64
	Perm       Perm
}

func pageByte(p *Page, a uint64) byte {
	return byte(p.W[(a&pageMask)>>3] >> ((a & 7) * 8))
}

func setPageByte(p *Page, a uint64, v byte) {
	w := &p.W[(a&pageMask)>>3]
	sh := (a & 7) * 8
	*w = *w&^(0xff<<sh) | uint64(v)<<sh
}

// Move moves the pages of [from, from+size) to [to, to+size), as mremap
// does: the contents travel with the pages and the old range is left
// unmapped. The ranges must be page aligned and must not overlap.
func (as *AddressSpace) Move(from, to, size uint64) {
	n := (size + pageMask) >> PageShift
	for i := uint64(0); i < n; i++ {
		if p := as.pages.get(from>>PageShift + i); p != nil {
			as.pages.set(from>>PageShift+i, nil)
			if old := as.pages.get(to>>PageShift + i); old != nil {
				old.refs.Add(-1)
			}
			as.pages.set(to>>PageShift+i, p)
		}
	}
	as.gen++
}
