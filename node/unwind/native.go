package unwind

import "encoding/binary"

// The native walk: a call chain from the registers and the copy of the
// user stack a Linux kernel takes with a sample (PERF_SAMPLE_REGS_USER
// and PERF_SAMPLE_STACK_USER), over the tables of the process's images:
// what perf record --call-graph dwarf does after the fact, done by the
// host's reader before the sample reaches the driver. Code without
// frame pointers (most distribution binaries on x86-64) has call frame
// information in .eh_frame for every procedure, so the walk follows the
// compiler's rules where the kernel's frame-pointer chain guesses. Where
// no row covers a PC (a procedure without CFI, or code in no image, such
// as the vDSO or a JIT), it follows the frame pointer as the kernel
// would.

// Finder finds the image holding pc for a native walk: the address its
// table's offsets count from, and its table (nil: no call frame
// information; the frame pointer does its frames).
type Finder interface {
	Find(pc uint64) (base uint64, t *Table, ok bool)
}

// Find is a Space's Finder.
func (s *Space) Find(pc uint64) (uint64, *Table, bool) {
	if im := s.find(pc); im != nil {
		return im.Base, im.Table, true
	}
	return 0, nil, false
}

// NativeRegs are the sampled user registers the native walk starts from:
// the PC, the stack and frame pointers, and on arm64 the link register.
type NativeRegs struct{ PC, SP, FP, LR uint64 }

// StackCopy is a copy of user stack memory from SP up, as the kernel
// took it with a sample: a Memory whose reads outside the copy fail, so
// a walk ends cleanly where the copy does.
type StackCopy struct {
	SP   uint64
	Data []byte
}

// Read8 reads the quadword at addr from the copy.
func (c StackCopy) Read8(addr uint64) (uint64, bool) {
	off := addr - c.SP
	if addr < c.SP || off >= uint64(len(c.Data)) || uint64(len(c.Data))-off < 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(c.Data[off:]), true
}

// WalkNative writes the call chain of r into out, leaf first, with
// arch's rules (tables of other instruction sets cover nothing): out[0]
// is r.PC and each later entry a return address. It stops at the
// outermost frame (a return address of zero or undefined), at len(out)
// frames (Truncated), or at the first frame it cannot unwind or
// validate (Truncated): a rule it cannot follow, a read outside mem, a
// CFA that does not move up the stack (a loop of frames), a return
// address in no image or outside its image's executable ranges. It
// allocates nothing.
func WalkNative(arch *Arch, images Finder, r NativeRegs, mem Memory, out []uint64) Result {
	var res Result
	if len(out) == 0 {
		res.Truncated = true
		return res
	}
	out[0] = r.PC
	res.N = 1
	pc, sp, fp := r.PC, r.SP, r.FP
	stop := func() Result {
		res.Truncated = true
		return res
	}
	for frame := 0; ; frame++ {
		look := pc
		if frame > 0 {
			look = pc - 1 // inside the call: a noreturn call may end its procedure
		}
		res.Steps++
		var row *Row
		if base, t, ok := images.Find(look); ok && t != nil && t.arch == arch {
			row, _ = t.lookup(look - base)
		}
		var cfa, next uint64
		if row == nil {
			// No rule: the frame record {caller's FP, return address} the
			// frame pointer points at, on both x86-64 and arm64; the
			// caller's SP is just above it. A leaf that has not pushed
			// its record yet shows under its caller's caller, as in the
			// kernel's chain.
			res.FramePointer++
			if fp < sp {
				return stop() // not a frame record on this stack
			}
			v, ok := read(mem, fp+8, &res)
			if !ok {
				return stop()
			}
			callerFP, ok := read(mem, fp, &res)
			if !ok {
				return stop()
			}
			cfa, next, fp = fp+16, v, callerFP
		} else {
			switch row.CFAReg {
			case arch.SP:
				cfa = sp + uint64(int64(row.CFAOff))
			case arch.FP:
				cfa = fp + uint64(int64(row.CFAOff))
			default:
				return stop()
			}
			switch row.RA {
			case Undefined:
				return res // the outermost frame
			case AtCFA:
				v, ok := read(mem, cfa+uint64(int64(row.RAOff)), &res)
				if !ok {
					return stop()
				}
				next = v
			case Same:
				// Only the sampled frame's link register is known: a
				// caller's was overwritten by the call it made.
				if frame > 0 || len(arch.RARegs) == 0 || row.RAReg != arch.RARegs[0] {
					return stop()
				}
				next = r.LR
			default:
				return stop()
			}
			switch row.FP {
			case AtCFA:
				v, ok := read(mem, cfa+uint64(int64(row.FPOff)), &res)
				if !ok {
					return stop()
				}
				fp = v
			case Same:
			default:
				return stop()
			}
		}
		next &= arch.AddrMask
		if next == 0 {
			return res // the outermost frame: _start's return address is zero
		}
		// The caller's frame lies above this one: each frame must move
		// the CFA up, or the walk could read the same slots forever. The
		// sampled leaf alone may keep SP (arm64, its return address still
		// in the link register).
		if cfa < sp || (cfa == sp && (frame > 0 || row == nil || row.RA != Same)) {
			return stop()
		}
		base, t, ok := images.Find(next - 1)
		if !ok || !t.executableOrUnknown(next-1-base) {
			return stop()
		}
		if res.N == len(out) {
			return stop()
		}
		out[res.N] = next
		res.N++
		sp, pc = cfa, next
	}
}
