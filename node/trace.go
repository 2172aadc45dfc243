package node

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"dcpi/hwsim/alpha"
)

// A sample trace is the input of the driver, recorded: for each counter
// interrupt, the CPU, the process, the PC and the event, in the order the
// CPUs took them. DCPI's authors logged such traces with a special version
// of their driver to study table designs (sec. 5.4); Simulate replays them.
//
// Format, version 1 (integers are unsigned LEB128 varints unless said):
//
//	header   "DCPItrc" version(1 byte) cpus
//	sample   cpu+1 pid incarnation event(1 byte) pcdelta(signed varint, zigzag)
//	...
//	end      0 count
//
// cpu is below the header's cpus (at most MaxTraceCPUs); pid and
// incarnation fit 32 bits; event is an alpha.Event; pcdelta is the
// sample's PC minus the previous PC recorded for the same CPU (0 for the
// first), modulo 2^64, so a CPU running one loop costs one or two bytes of
// PC a sample, and a sample takes 5 to 8 bytes. The end record repeats the
// number of samples, so that a trace cut short at a record boundary is
// still detected, and nothing may follow it.

const (
	traceMagic   = "DCPItrc"
	traceVersion = 1
	// MaxTraceCPUs bounds a trace's CPU count.
	MaxTraceCPUs = 1024
)

// ErrBadTrace is wrapped by every error about a malformed trace.
var ErrBadTrace = errors.New("malformed sample trace")

// TraceSample is one recorded counter interrupt.
type TraceSample struct {
	CPU int
	// PID is the process's PID (0 when the CPU was idle), Incarnation
	// hwsim's process-image identity (Sample.Incarnation), which node's
	// daemon hands the driver as its process key.
	PID, Incarnation uint32
	PC               uint64
	Event            uint8
}

// Key is the process key the driver would have hashed: the incarnation.
func (s TraceSample) Key() uint32 { return s.Incarnation }

// Trace is a whole trace in memory.
type Trace struct {
	CPUs    int
	Samples []TraceSample
}

// TraceWriter writes a trace. Close writes the end record; a trace
// without it is rejected by the reader.
type TraceWriter struct {
	w      *bufio.Writer
	cpus   int
	prevPC []uint64
	n      uint64
	buf    [4*binary.MaxVarintLen64 + 1]byte
	err    error
}

// NewTraceWriter writes the header of a trace of a machine of cpus CPUs.
func NewTraceWriter(w io.Writer, cpus int) (*TraceWriter, error) {
	if cpus < 1 || cpus > MaxTraceCPUs {
		return nil, fmt.Errorf("node: trace of %d CPUs: want 1 to %d", cpus, MaxTraceCPUs)
	}
	tw := &TraceWriter{w: bufio.NewWriterSize(w, 64<<10), cpus: cpus, prevPC: make([]uint64, cpus)}
	hdr := append([]byte(traceMagic), traceVersion)
	hdr = binary.AppendUvarint(hdr, uint64(cpus))
	if _, err := tw.w.Write(hdr); err != nil {
		return nil, fmt.Errorf("node: trace header: %w", err)
	}
	return tw, nil
}

// Write appends one sample.
func (tw *TraceWriter) Write(s TraceSample) error {
	if tw.err != nil {
		return tw.err
	}
	if s.CPU < 0 || s.CPU >= tw.cpus {
		return fmt.Errorf("node: trace sample on cpu %d of %d", s.CPU, tw.cpus)
	}
	if alpha.Event(s.Event) >= alpha.NumEvents {
		return fmt.Errorf("node: trace sample of unknown event %d", s.Event)
	}
	b := binary.AppendUvarint(tw.buf[:0], uint64(s.CPU)+1)
	b = binary.AppendUvarint(b, uint64(s.PID))
	b = binary.AppendUvarint(b, uint64(s.Incarnation))
	b = append(b, s.Event)
	b = binary.AppendVarint(b, int64(s.PC-tw.prevPC[s.CPU]))
	tw.prevPC[s.CPU] = s.PC
	if _, err := tw.w.Write(b); err != nil {
		tw.err = fmt.Errorf("node: trace: %w", err)
		return tw.err
	}
	tw.n++
	return nil
}

// Count is the number of samples written.
func (tw *TraceWriter) Count() uint64 { return tw.n }

// Close writes the end record and flushes; it does not close the
// underlying writer.
func (tw *TraceWriter) Close() error {
	if tw.err != nil {
		return tw.err
	}
	b := binary.AppendUvarint(tw.buf[:0], 0)
	b = binary.AppendUvarint(b, tw.n)
	if _, err := tw.w.Write(b); err != nil {
		tw.err = fmt.Errorf("node: trace: %w", err)
		return tw.err
	}
	if err := tw.w.Flush(); err != nil {
		tw.err = fmt.Errorf("node: trace: %w", err)
		return tw.err
	}
	tw.err = errors.New("node: trace writer closed")
	return nil
}

// TraceReader reads a trace sample by sample.
type TraceReader struct {
	r      countingReader
	cpus   int
	prevPC []uint64
	n      uint64
	done   bool
}

// countingReader counts the bytes consumed, for error messages.
type countingReader struct {
	r   *bufio.Reader
	off int64
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.off++
	}
	return b, err
}

// NewTraceReader reads and checks a trace's header.
func NewTraceReader(r io.Reader) (*TraceReader, error) {
	tr := &TraceReader{r: countingReader{r: bufio.NewReaderSize(r, 64<<10)}}
	var hdr [len(traceMagic) + 1]byte
	if _, err := io.ReadFull(tr.r.r, hdr[:]); err != nil {
		return nil, tr.bad("header", err)
	}
	tr.r.off = int64(len(hdr))
	if string(hdr[:len(traceMagic)]) != traceMagic {
		return nil, fmt.Errorf("node: trace: not a sample trace (magic %q): %w", hdr[:len(traceMagic)], ErrBadTrace)
	}
	if v := hdr[len(traceMagic)]; v != traceVersion {
		return nil, fmt.Errorf("node: trace: version %d, this reader knows %d: %w", v, traceVersion, ErrBadTrace)
	}
	cpus, err := binary.ReadUvarint(&tr.r)
	if err != nil {
		return nil, tr.bad("header: cpus", err)
	}
	if cpus < 1 || cpus > MaxTraceCPUs {
		return nil, fmt.Errorf("node: trace: header: %d CPUs, want 1 to %d: %w", cpus, MaxTraceCPUs, ErrBadTrace)
	}
	tr.cpus = int(cpus)
	tr.prevPC = make([]uint64, cpus)
	return tr, nil
}

// CPUs is the header's CPU count.
func (tr *TraceReader) CPUs() int { return tr.cpus }

// bad describes a read error; end of input is unexpected anywhere but
// after the end record.
func (tr *TraceReader) bad(what string, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("node: trace: %s at byte %d: %w: %w", what, tr.r.off, ErrBadTrace, err)
}

func (tr *TraceReader) invalid(format string, a ...any) error {
	return fmt.Errorf("node: trace: sample %d: %s: %w", tr.n, fmt.Sprintf(format, a...), ErrBadTrace)
}

// Next returns the next sample, or io.EOF after the end record. Any other
// error wraps ErrBadTrace and says where the trace is wrong.
func (tr *TraceReader) Next() (TraceSample, error) {
	if tr.done {
		return TraceSample{}, io.EOF
	}
	field := func(name string, err error) error { return tr.bad(fmt.Sprintf("sample %d: %s", tr.n, name), err) }
	tag, err := binary.ReadUvarint(&tr.r)
	if err != nil {
		return TraceSample{}, field("cpu", err)
	}
	if tag == 0 {
		return TraceSample{}, tr.end()
	}
	if tag > uint64(tr.cpus) {
		return TraceSample{}, tr.invalid("cpu %d of %d", tag-1, tr.cpus)
	}
	s := TraceSample{CPU: int(tag - 1)}
	pid, err := binary.ReadUvarint(&tr.r)
	if err != nil {
		return TraceSample{}, field("pid", err)
	}
	inc, err := binary.ReadUvarint(&tr.r)
	if err != nil {
		return TraceSample{}, field("incarnation", err)
	}
	if pid > math.MaxUint32 || inc > math.MaxUint32 {
		return TraceSample{}, tr.invalid("pid %d, incarnation %d: more than 32 bits", pid, inc)
	}
	s.PID, s.Incarnation = uint32(pid), uint32(inc)
	ev, err := tr.r.ReadByte()
	if err != nil {
		return TraceSample{}, field("event", err)
	}
	if alpha.Event(ev) >= alpha.NumEvents {
		return TraceSample{}, tr.invalid("unknown event %d", ev)
	}
	s.Event = ev
	delta, err := binary.ReadVarint(&tr.r)
	if err != nil {
		return TraceSample{}, field("pc", err)
	}
	s.PC = tr.prevPC[s.CPU] + uint64(delta)
	tr.prevPC[s.CPU] = s.PC
	tr.n++
	return s, nil
}

// end checks the end record, whose tag Next has read, and that nothing
// follows it; it returns io.EOF if all is well.
func (tr *TraceReader) end() error {
	count, err := binary.ReadUvarint(&tr.r)
	if err != nil {
		return tr.bad("end record", err)
	}
	if count != tr.n {
		return fmt.Errorf("node: trace: end record counts %d samples, the trace holds %d: %w", count, tr.n, ErrBadTrace)
	}
	switch _, err := tr.r.ReadByte(); {
	case err == nil:
		return fmt.Errorf("node: trace: data after the end record at byte %d: %w", tr.r.off-1, ErrBadTrace)
	case err != io.EOF:
		return tr.bad("after the end record", err)
	}
	tr.done = true
	return io.EOF
}

// ReadTrace reads a whole trace.
func ReadTrace(r io.Reader) (*Trace, error) {
	tr, err := NewTraceReader(r)
	if err != nil {
		return nil, err
	}
	t := &Trace{CPUs: tr.CPUs()}
	for {
		s, err := tr.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		t.Samples = append(t.Samples, s)
	}
}

// WriteTrace writes a whole trace.
func WriteTrace(w io.Writer, t *Trace) error {
	tw, err := NewTraceWriter(w, t.CPUs)
	if err != nil {
		return err
	}
	for _, s := range t.Samples {
		if err := tw.Write(s); err != nil {
			return err
		}
	}
	return tw.Close()
}
