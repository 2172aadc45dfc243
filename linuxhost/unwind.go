package linuxhost

import (
	"debug/elf"
	"fmt"
	"runtime"
	"slices"
	"sort"

	"dcpi/hwsim/elfimage"
	"dcpi/internal/cfi"
	"dcpi/node/unwind"
)

// Call stacks from copies of the user stack: with Config.UserStack, each
// sample carries the user registers and the top of the user stack (the
// kernel copies them at the sample), and the reader walks them with the
// .eh_frame of the process's images (unwind.WalkNative) before the
// sample reaches the driver: code built without frame pointers, which
// the kernel's frame-pointer chain gets wrong, gets its callers. The
// kernel's chain keeps its kernel frames (they come first); the walk
// gives the user part.

// DefaultUserStack is the user stack copied with each sample when stacks
// are wanted: perf record --call-graph dwarf's default, enough for the
// frames of most programs' hot paths.
const DefaultUserStack = 8 << 10

// maxUserStack bounds Config.UserStack: a record's size is 16 bits.
const maxUserStack = 60 << 10

// sampleOverhead is a sample's bytes besides its stack copy, at most:
// the fields, a kernel chain of some depth, the registers.
const sampleOverhead = 1024

// userArch is what the walk needs of this machine's instruction set: the
// walk's registers as DWARF numbers them, the perf registers to sample,
// and where each lands in Record.Regs (in the order of the mask's bits).
type userArch struct {
	arch           *unwind.Arch
	machine        elf.Machine
	mask           uint64
	pc, sp, fp, lr int // lr: -1 when the return address is never in a register
}

var userArches = map[string]userArch{
	// PERF_REG_X86_BP 6, SP 7, IP 8.
	"amd64": {arch: unwind.AMD64, machine: elf.EM_X86_64, mask: 1<<6 | 1<<7 | 1<<8, fp: 0, sp: 1, pc: 2, lr: -1},
	// PERF_REG_ARM64_X29 29, LR 30, SP 31, PC 32.
	"arm64": {arch: unwind.ARM64, machine: elf.EM_AARCH64, mask: 1<<29 | 1<<30 | 1<<31 | 1<<32, fp: 0, lr: 1, sp: 2, pc: 3},
}

// nativeArch is this machine's, ok false where the walk does not know it.
func nativeArch() (userArch, bool) {
	a, ok := userArches[runtime.GOARCH]
	return a, ok
}

// regs is the walk's start from a sample's registers.
func (a userArch) regs(r *Record) unwind.NativeRegs {
	nr := unwind.NativeRegs{PC: r.Regs[a.pc], SP: r.Regs[a.sp], FP: r.Regs[a.fp]}
	if a.lr >= 0 {
		nr.LR = r.Regs[a.lr]
	}
	return nr
}

// NativeTable compiles the .eh_frame of the ELF file at path for the
// native walk, with offsets from the address the file's offset 0 is
// linked at (a mapping's Base in the host's events). A file of another
// machine, or without .eh_frame, has no table (nil, nil): the walk
// follows the frame pointer through it.
func NativeTable(path string, arch *unwind.Arch, machine elf.Machine) (*unwind.Table, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Machine != machine || f.Class != elf.ELFCLASS64 || f.ByteOrder.String() != "LittleEndian" {
		return nil, nil
	}
	var linkBase uint64
	var exec []elf.ProgHeader
	found := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			if !found {
				linkBase, found = p.Vaddr-p.Off, true
			}
			exec = append(exec, p.ProgHeader)
		}
	}
	sec := f.Section(".eh_frame")
	if !found || sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("linuxhost: %s: .eh_frame: %w", path, err)
	}
	fdes, err := elfimage.ParseFrames(data, sec.Addr, path, arch.FP)
	if err != nil {
		return nil, err
	}
	var ranges []unwind.Range
	for _, p := range exec {
		if p.Vaddr >= linkBase {
			ranges = append(ranges, unwind.Range{Lo: p.Vaddr - linkBase, Hi: p.Vaddr + p.Memsz - linkBase})
		}
	}
	return cfi.Table(arch, fdes, linkBase, ranges)
}

// procImage is one file mapping of a process as the walk sees it.
type procImage struct {
	start, end, base uint64
	id               string // the image's identity ("": unknown, no table)
	path             string
}

// procImages is a process's mappings sorted by start, the walk's
// unwind.Finder; tables are compiled on a PC's first need, once per
// image identity.
type procImages struct {
	h      *Host
	images []procImage
}

// imagesOf is p's mappings for the walk, rebuilt after they changed.
func (h *Host) imagesOf(p *process) *procImages {
	if p.walk != nil {
		return p.walk
	}
	w := &procImages{h: h}
	for m, id := range p.maps {
		w.images = append(w.images, procImage{start: m.Start, end: m.End, base: m.Start - m.Offset, id: id, path: m.Path})
	}
	sort.Slice(w.images, func(i, j int) bool { return w.images[i].start < w.images[j].start })
	p.walk = w
	return w
}

// Find is the image holding pc, its table compiled on first need.
func (w *procImages) Find(pc uint64) (uint64, *unwind.Table, bool) {
	i, _ := slices.BinarySearchFunc(w.images, pc, func(im procImage, pc uint64) int {
		switch {
		case im.end <= pc:
			return -1
		case im.start > pc:
			return 1
		}
		return 0
	})
	if i == len(w.images) || pc < w.images[i].start || pc >= w.images[i].end {
		return 0, nil, false
	}
	im := &w.images[i]
	return im.base, w.h.table(im), true
}

// table is im's image's table, compiled once per identity; an image whose
// table failed to compile is walked by frame pointer and counted.
func (h *Host) table(im *procImage) *unwind.Table {
	if im.id == "" {
		return nil
	}
	if t, ok := h.tables[im.id]; ok {
		return t
	}
	t0 := monotonic()
	t, err := NativeTable(im.path, h.arch.arch, h.arch.machine)
	h.mu.Lock()
	h.walks.TableNanos += monotonic() - t0
	if err != nil {
		h.tableErrs++
		t = nil
	}
	h.mu.Unlock()
	h.tables[im.id] = t
	return t
}

// maxChain bounds a walked chain: the kernel's own bound on callchains.
const maxChain = 127

// walk is r's call chain: the kernel's frames of its callchain, then the
// user frames walked from its registers and stack copy; truncated when
// the walk stopped before the outermost frame.
func (h *Host) walk(p *process, r *Record) (chain []uint64, truncated bool) {
	if r.UserABI == 0 || p == nil {
		// A kernel thread, or the idle task: the kernel's frames alone.
		if len(r.Chain) > 0 {
			return r.Chain, false
		}
		return []uint64{r.IP}, false
	}
	var out [maxChain]uint64
	t0 := monotonic()
	res := unwind.WalkNative(h.arch.arch, h.imagesOf(p), h.arch.regs(r), unwind.StackCopy{SP: h.arch.regs(r).SP, Data: r.Stack}, out[:])
	h.mu.Lock()
	h.walks.Walked++
	h.walks.Frames += uint64(res.N)
	h.walks.FramePointer += uint64(res.FramePointer)
	if res.Truncated {
		h.walks.Truncated++
	}
	h.walks.Nanos += monotonic() - t0
	h.mu.Unlock()
	chain = make([]uint64, 0, len(r.Chain)+res.N)
	chain = append(chain, r.Chain...)
	return append(chain, out[:res.N]...), res.Truncated
}
