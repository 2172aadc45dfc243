package linuxhost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// The sample layout this package programs (attr.sample_type): the
// decoder reads exactly these fields, in the kernel's order.
const (
	sampleIP        = 1 << 0
	sampleTID       = 1 << 1
	sampleTime      = 1 << 2
	sampleCPU       = 1 << 7
	samplePeriod    = 1 << 8
	sampleCallchain = 1 << 5
	sampleRegsUser  = 1 << 12
	sampleStackUser = 1 << 13

	// SampleType is what every sample record carries; a Layout with
	// stacks adds the user registers and stack copy.
	SampleType = sampleIP | sampleTID | sampleTime | sampleCallchain | sampleCPU | samplePeriod
)

// MaxUserRegs bounds the user registers a sample may carry.
const MaxUserRegs = 8

// Layout is what sample records carry beyond SampleType's fields: with
// Regs not 0, the user registers of that mask (PERF_SAMPLE_REGS_USER's
// sample_regs_user, at most MaxUserRegs of them) and a copy of the user
// stack (PERF_SAMPLE_STACK_USER). The zero Layout is the plain samples.
type Layout struct {
	Regs uint64
}

// sampleType is the attr.sample_type of l.
func (l Layout) sampleType() uint64 {
	if l.Regs == 0 {
		return SampleType
	}
	return SampleType | sampleRegsUser | sampleStackUser
}

// nregs is how many registers a sample of l carries.
func (l Layout) nregs() int { return bits.OnesCount64(l.Regs) }

// Record types (include/uapi/linux/perf_event.h).
const (
	recordMmap        = 1
	recordLost        = 2
	recordComm        = 3
	recordExit        = 4
	recordThrottle    = 5
	recordUnthrottle  = 6
	recordFork        = 7
	recordSample      = 9
	recordMmap2       = 10
	recordLostSamples = 13
)

const (
	miscCommExec    = 1 << 13 // PERF_RECORD_MISC_COMM_EXEC
	miscMmapBuildID = 1 << 14 // PERF_RECORD_MISC_MMAP_BUILD_ID
	miscCPUModeMask = 7
	miscKernel      = 1
	miscUser        = 2

	// Call chain context markers (PERF_CONTEXT_*): not frames.
	contextMax = ^uint64(0) - 4095 // -4095: every marker is at or above
)

// ErrRecord is a record the decoder cannot read: truncated, or its
// fields disagree with its size.
var ErrRecord = errors.New("linuxhost: malformed perf record")

// Kind is a decoded record's kind.
type Kind uint8

// The records the host follows; others decode as KindOther.
const (
	KindOther Kind = iota
	KindSample
	KindMmap
	KindComm
	KindFork
	KindExit
	KindLost
)

// Record is one decoded ring buffer record. Which fields are set depends
// on Kind; Time, and CPU of samples, come from the sample fields (every
// record carries them: attr.sample_id_all).
type Record struct {
	Kind     Kind
	PID, TID uint32
	Time     uint64 // ns, the event clock (CLOCK_MONOTONIC)
	CPU      uint32

	// KindSample.
	IP     uint64
	Kernel bool   // the PC is in the kernel
	Period uint64 // events the sample stands for
	// Chain is the call chain, innermost first, context markers removed.
	Chain []uint64
	// With a Layout's stacks: the interrupted user context. UserABI is
	// the kernel's PERF_SAMPLE_REGS_ABI (0: none, a kernel thread: no
	// registers and no stack); Regs holds the Layout's registers in
	// the order of their bits; Stack is the user stack from the sampled
	// SP up, as much as the kernel could copy (it aliases the record).
	UserABI uint64
	Regs    [MaxUserRegs]uint64
	Stack   []byte

	// KindFork and KindExit: the parent (fork) or the process itself.
	PPID, PTID uint32

	// KindComm: Comm, and Exec when the name changed because of exec.
	Comm string
	Exec bool

	// KindMmap: an executable mapping [Addr, Addr+Len) of File from
	// PgOff; BuildID when the kernel read it (MMAP2 with build ID).
	Addr, Len, PgOff uint64
	BuildID          []byte
	File             string

	// KindLost: records (samples among them) the kernel could not write
	// because the ring was full.
	Lost uint64
}

// Header is a record's header: type, misc flags and total size.
type Header struct {
	Type uint32
	Misc uint16
	Size uint16
}

// ParseHeader reads the 8-byte record header at the start of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < 8 {
		return Header{}, fmt.Errorf("%w: header of %d bytes", ErrRecord, len(b))
	}
	h := Header{Type: le.Uint32(b), Misc: le.Uint16(b[4:]), Size: le.Uint16(b[6:])}
	if h.Size < 8 || h.Size%8 != 0 {
		return h, fmt.Errorf("%w: size %d", ErrRecord, h.Size)
	}
	return h, nil
}

var le = binary.LittleEndian

// reader takes fields off a record body.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.bad, r.b = true, nil
		return 0
	}
	v := le.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) u32() uint32 {
	if len(r.b) < 4 {
		r.bad, r.b = true, nil
		return 0
	}
	v := le.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.bad, r.b = true, nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// cstring takes a NUL-terminated string padded to 8 bytes.
func (r *reader) cstring() string {
	for i, c := range r.b {
		if c == 0 {
			s := string(r.b[:i])
			n := (i + 8) &^ 7
			if n > len(r.b) {
				n = len(r.b)
			}
			r.b = r.b[n:]
			return s
		}
	}
	r.bad, r.b = true, nil
	return ""
}

// sampleID reads the trailer sample_id_all appends to non-sample records:
// TID, TIME and CPU, as SampleType asks.
func (r *reader) sampleID(rec *Record) {
	if len(r.b) < 24 {
		return // a record written before the event was set up: no trailer
	}
	t := r.b[len(r.b)-24:]
	rec.Time, rec.CPU = le.Uint64(t[8:]), le.Uint32(t[16:])
}

// Parse decodes one whole record (header included, len(b) == its size)
// of the plain layout. BuildID aliases b; Chain is a copy.
func Parse(b []byte) (Record, error) { return ParseLayout(b, Layout{}) }

// ParseLayout decodes one whole record whose samples have layout l.
// BuildID and Stack alias b; Chain is a copy.
func ParseLayout(b []byte, l Layout) (Record, error) {
	if l.nregs() > MaxUserRegs {
		return Record{}, fmt.Errorf("linuxhost: layout of %d user registers (at most %d)", l.nregs(), MaxUserRegs)
	}
	h, err := ParseHeader(b)
	if err != nil {
		return Record{}, err
	}
	if int(h.Size) != len(b) {
		return Record{}, fmt.Errorf("%w: size %d, have %d bytes", ErrRecord, h.Size, len(b))
	}
	r := reader{b: b[8:]}
	var rec Record
	switch h.Type {
	case recordSample:
		rec.Kind = KindSample
		rec.IP = r.u64()
		rec.PID, rec.TID = r.u32(), r.u32()
		rec.Time = r.u64()
		rec.CPU = r.u32()
		r.u32()
		rec.Period = r.u64()
		n := r.u64()
		if n > uint64(len(r.b)/8) {
			return Record{}, fmt.Errorf("%w: call chain of %d frames in %d bytes", ErrRecord, n, len(r.b))
		}
		raw := r.bytes(int(n) * 8)
		rec.Chain = chainOf(raw)
		rec.Kernel = h.Misc&miscCPUModeMask == miscKernel
		if l.Regs != 0 {
			if err := r.userContext(&rec, l.nregs()); err != nil {
				return Record{}, err
			}
		}
	case recordMmap2:
		rec.Kind = KindMmap
		rec.PID, rec.TID = r.u32(), r.u32()
		rec.Addr, rec.Len, rec.PgOff = r.u64(), r.u64(), r.u64()
		if h.Misc&miscMmapBuildID != 0 {
			n := r.bytes(4)
			id := r.bytes(20)
			if n != nil && id != nil && int(n[0]) <= len(id) {
				rec.BuildID = id[:n[0]]
			}
		} else {
			r.bytes(24) // maj, min, ino, ino_generation
		}
		r.u32() // prot
		r.u32() // flags
		rec.File = r.cstring()
		r.sampleID(&rec)
	case recordComm:
		rec.Kind = KindComm
		rec.PID, rec.TID = r.u32(), r.u32()
		rec.Comm = r.cstring()
		rec.Exec = h.Misc&miscCommExec != 0
		r.sampleID(&rec)
	case recordFork, recordExit:
		rec.Kind = KindFork
		if h.Type == recordExit {
			rec.Kind = KindExit
		}
		rec.PID, rec.PPID, rec.TID, rec.PTID = r.u32(), r.u32(), r.u32(), r.u32()
		rec.Time = r.u64()
		r.sampleID(&rec)
	case recordLost:
		rec.Kind = KindLost
		r.u64() // id
		rec.Lost = r.u64()
		r.sampleID(&rec)
	case recordLostSamples:
		rec.Kind = KindLost
		rec.Lost = r.u64()
		r.sampleID(&rec)
	default:
		r.sampleID(&rec)
		return rec, nil
	}
	if r.bad {
		return Record{}, fmt.Errorf("%w: type %d truncated at %d bytes", ErrRecord, h.Type, h.Size)
	}
	return rec, nil
}

// userContext reads PERF_SAMPLE_REGS_USER (u64 abi; u64 regs[n] unless
// abi is 0) and PERF_SAMPLE_STACK_USER (u64 size; then, unless size is
// 0, char data[size] and u64 dyn_size, the bytes of data the kernel
// filled).
func (r *reader) userContext(rec *Record, n int) error {
	rec.UserABI = r.u64()
	if rec.UserABI != 0 {
		for i := range n {
			rec.Regs[i] = r.u64()
		}
	}
	size := r.u64()
	if size == 0 {
		return nil
	}
	if size > uint64(len(r.b)) || size%8 != 0 {
		return fmt.Errorf("%w: user stack of %d bytes in %d", ErrRecord, size, len(r.b))
	}
	data := r.bytes(int(size))
	dyn := r.u64()
	if r.bad || dyn > size {
		return fmt.Errorf("%w: user stack of %d bytes, %d filled", ErrRecord, size, dyn)
	}
	rec.Stack = data[:dyn]
	return nil
}

// chainOf is raw's frames with the context markers dropped.
func chainOf(raw []byte) []uint64 {
	out := make([]uint64, 0, len(raw)/8)
	for i := 0; i+8 <= len(raw); i += 8 {
		if pc := le.Uint64(raw[i:]); pc < contextMax {
			out = append(out, pc)
		}
	}
	return out
}

// Split cuts a run of records copied from a ring into whole records,
// calling fn with each; it stops at the first malformed header (the rest
// is counted by the caller as lost) and returns the bytes consumed.
func Split(b []byte, fn func(rec []byte)) (int, error) {
	off := 0
	for off < len(b) {
		h, err := ParseHeader(b[off:])
		if err != nil {
			return off, err
		}
		if off+int(h.Size) > len(b) {
			return off, fmt.Errorf("%w: record of %d bytes, %d left", ErrRecord, h.Size, len(b)-off)
		}
		fn(b[off : off+int(h.Size)])
		off += int(h.Size)
	}
	return off, nil
}
