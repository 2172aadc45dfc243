package hwsim

import (
	"fmt"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
)

// exec replaces p's program with im: a new address space holding the
// image's segments and an initial stack, and registers set for its entry.
// Nothing of p changes if it fails.
func (m *Machine) exec(p *Process, c *cpuState, path string, im *elfimage.Image, argv, envp []string) error {
	tmpl, err := m.template(path, im)
	if err != nil {
		return err
	}
	vmas, lo, hi := tmpl.vmas, tmpl.lo, tmpl.hi
	// Every process running the image starts from a copy-on-write copy of
	// one pristine template, so text pages, and their decoded
	// instructions, are shared by all of them, as a page cache shares them.
	as := tmpl.as.Fork()

	var random [16]byte
	m.rand.Read(random[:])
	ap := elfimage.DefaultAuxParams()
	ap.HWCap = uint64(m.cfg.Model.Ext)
	ap.UID, ap.EUID, ap.GID, ap.EGID = 1000, 1000, 1000, 1000
	auxv := elfimage.AuxVector(im, ap)
	entry := im.Entry
	if tmpl.interp != nil {
		// The kernel starts the interpreter, which finds the program
		// through AT_PHDR and AT_ENTRY and itself through AT_BASE.
		entry = tmpl.interp.Entry + interpBase
		for i := range auxv {
			if auxv[i].Type == elfimage.AtBase {
				auxv[i].Value = interpBase
			}
		}
	}
	mem, sp, err := elfimage.BuildStack(stackTop, argv, envp, auxv, m.cfg.Model.Name, random, path)
	if err == nil && stackTop-sp > stackMax/2 {
		err = fmt.Errorf("arguments and environment too large (%d bytes)", stackTop-sp)
	}
	if err != nil {
		as.Release()
		return fmt.Errorf("exec %s: %w", path, err)
	}
	stackLo := uint64(stackTop - stackMax)
	as.Map(sp&^pageMask, stackTop-(sp&^pageMask), alpha.PermR|alpha.PermW)
	if err := as.WriteBytes(sp, mem); err != nil {
		as.Release()
		return fmt.Errorf("exec %s: stack: %w", path, err)
	}

	// Commit: from here nothing fails.
	if p.as != nil {
		p.as.Release()
	}
	p.as = as
	p.vmas = nil
	for _, v := range append(vmas, vma{start: stackLo, end: stackTop, perm: alpha.PermR | alpha.PermW, kind: vmaStack}) {
		p.addVMA(v)
	}
	heap := (hi + pageMask) &^ pageMask
	p.brkLo, p.brk = heap, heap
	p.Path, p.Argv, p.Image = path, append([]string(nil), argv...), im
	p.execCount++
	p.ctx = alpha.Context{PC: entry, FPCR: initialFPCR}
	p.ctx.R[30] = sp
	p.ctx.R[27] = entry // pv holds the procedure's address at entry
	p.closeOnExec()
	p.clearTID = 0
	p.execSignals()
	m.freshASN(p)

	cyc := m.cycleOf(c)
	prev := p.Incarnation
	m.lastInc++
	p.Incarnation = m.lastInc
	m.emit(Event{Kind: EventExec, Cycle: cyc, CPU: c.id, PID: p.PID, Path: path,
		Incarnation: p.Incarnation, ParentIncarnation: prev})
	m.emit(Event{Kind: EventMap, Cycle: cyc, CPU: c.id, PID: p.PID, ImageID: im.ID.String(),
		Path: path, Base: lo, Size: hi - lo, Incarnation: p.Incarnation})
	if in := tmpl.interp; in != nil {
		m.emit(Event{Kind: EventMap, Cycle: cyc, CPU: c.id, PID: p.PID, ImageID: in.ID.String(),
			Path: tmpl.interpPath, Base: tmpl.interpLo, Size: tmpl.interpHi - tmpl.interpLo, Bias: interpBase,
			Incarnation: p.Incarnation})
	}
	return nil
}

// initialFPCR is the FPCR Linux gives a new thread: dynamic rounding to
// nearest and every trap disabled, so IEEE default results are produced.
const initialFPCR = alpha.FPCRDynNormal | alpha.FPCRTrapsDisabled

func segPerm(f elfimage.Perm) alpha.Perm {
	var p alpha.Perm
	if f&elfimage.PermR != 0 {
		p |= alpha.PermR
	}
	if f&elfimage.PermW != 0 {
		p |= alpha.PermW
	}
	if f&elfimage.PermX != 0 {
		p |= alpha.PermX
	}
	return p
}

// loadedImage is an image loaded once into an address space of its own,
// the template every exec of it copies.
type loadedImage struct {
	im     *elfimage.Image
	as     *alpha.AddressSpace
	vmas   []vma
	lo, hi uint64 // lowest mapped address; end of the last segment

	// interp is a dynamically linked program's interpreter, loaded at
	// interpBase (its vmas are among vmas), at [interpLo, interpHi).
	interp             *elfimage.Image
	interpPath         string
	interpLo, interpHi uint64
}

// template returns the loaded form of im, building it on first use.
func (m *Machine) template(path string, im *elfimage.Image) (*loadedImage, error) {
	if t, ok := m.templates[path]; ok && t.im == im {
		return t, nil
	}
	t := &loadedImage{im: im, as: alpha.NewAddressSpaceIn(&m.frames)}
	var err error
	if t.vmas, t.lo, t.hi, err = loadSegments(t.as, im, 0); err != nil {
		t.as.Release()
		return nil, fmt.Errorf("exec %s: %w", path, err)
	}
	if im.Interp != "" {
		f, in, err := m.interpreter(im)
		if err != nil {
			t.as.Release()
			return nil, fmt.Errorf("exec %s: %w", path, err)
		}
		iv, lo, hi, err := loadSegments(t.as, in, interpBase)
		if err != nil {
			t.as.Release()
			return nil, fmt.Errorf("exec %s: interpreter %s: %w", path, f.path, err)
		}
		t.vmas = append(t.vmas, iv...)
		t.interp, t.interpPath, t.interpLo, t.interpHi = in, f.path, lo, hi
	}
	m.templates[path] = t
	return t, nil
}

// loadSegments maps im's PT_LOAD segments into as, bias bytes above their
// addresses (0 for an executable), with their contents and returns the
// areas they occupy, the lowest mapped address and the end of the last
// segment.
func loadSegments(as *alpha.AddressSpace, im *elfimage.Image, bias uint64) (vmas []vma, lo, hi uint64, err error) {
	lo = ^uint64(0)
	for _, s := range im.Segments {
		perm := segPerm(s.Flags)
		va := s.Vaddr + bias
		start, end := va&^pageMask, (va+s.Memsz+pageMask)&^pageMask
		as.Map(start, end-start, perm)
		if err := as.WriteBytes(va, s.Data); err != nil {
			return nil, 0, 0, fmt.Errorf("segment at %#x: %w", va, err)
		}
		vmas = append(vmas, vma{start: start, end: end, perm: perm, kind: vmaImage})
		lo, hi = min(lo, start), max(hi, va+s.Memsz)
	}
	// Pages of adjacent segments may coincide; Map kept the last perm, so
	// give shared pages the union.
	for i := range vmas {
		for j := range vmas {
			if i != j && vmas[i].start < vmas[j].end && vmas[j].start < vmas[i].end {
				vmas[i].perm |= vmas[j].perm
			}
		}
	}
	for _, v := range vmas {
		as.Protect(v.start, v.end-v.start, v.perm)
	}
	return vmas, lo, hi, nil
}
