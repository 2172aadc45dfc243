package hwsim

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"dcpi/hwsim/elfimage"
)

// ErrInterpreter: a dynamically linked program's interpreter (PT_INTERP)
// is missing from the simulated file system or is not a loader this
// machine can run.
var ErrInterpreter = errors.New("bad program interpreter")

// interpBase is where exec maps a dynamically linked program's
// interpreter: the bottom of the mmap area, where Linux's
// load_elf_interp puts an ET_DYN interpreter (TASK_UNMAPPED_BASE).
// ld.so then maps the libraries above it.
const interpBase = mmapBase

// interpreter parses im's PT_INTERP file, which must be an Alpha shared
// object (ld-linux.so.2), for exec.
func (m *Machine) interpreter(im *elfimage.Image) (*simFile, *elfimage.Image, error) {
	f, err := m.readProgram(im.Interp)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInterpreter, err)
	}
	in, err := f.image()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInterpreter, err)
	}
	if !in.Shared {
		return nil, nil, fmt.Errorf("%w: %s: not a shared object (ET_DYN)", ErrInterpreter, f.path)
	}
	if in.Interp != "" {
		return nil, nil, fmt.Errorf("%w: %s: names an interpreter itself", ErrInterpreter, f.path)
	}
	return f, in, nil
}

// image parses f as what a loader maps (an executable or a shared object),
// once.
func (f *simFile) image() (*elfimage.Image, error) {
	if f.im == nil && f.imErr == nil {
		f.im, f.imErr = elfimage.ParseObject(f.data, f.path)
	}
	return f.im, f.imErr
}

// emitFileMap reports an executable mapping of file f at [addr, addr+n)
// from file offset off: DCPI's loader hook (sec. 4.3.2). The event carries
// the file's identity (its build ID, or a SHA-256 of the bytes) and the
// load bias, so that a sample's offset from Base plus the image's own
// address of Base is the address in the file's symbol table.
func (m *Machine) emitFileMap(c *cpuState, p *Process, f *simFile, addr, n, off uint64) {
	id, bias := "", addr-off
	if im, err := f.image(); err == nil {
		id = im.ID.String()
		for _, s := range im.Segments {
			if lo := s.Offset &^ pageMask; off >= lo && off < s.Offset+max(s.Filesz, 1) {
				bias = addr - (s.Vaddr&^pageMask + (off - lo))
				break
			}
		}
	} else {
		sum := sha256.Sum256(f.data)
		id = elfimage.ImageID{Kind: elfimage.IDSHA256, Bytes: sum[:]}.String()
	}
	m.emit(Event{Kind: EventMap, Cycle: m.cycleOf(c), CPU: c.id, PID: p.PID, ImageID: id, Path: f.path,
		Base: addr, Size: n, Bias: bias, Incarnation: p.Incarnation})
}
