package wire

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"dcpi/internal/bincodec"
)

// ProcessRecord is one process of a host: its PID, the binary it runs (the
// path of its main image) and the labels the user gave it, published once
// per process by the node's daemon when it first learns the process's main
// image. It is what the selectors' binary=, pid= and process labels match,
// and what `prof --by binary` groups by.
//
// The record names no host, on purpose: the host is the one whose
// credentials sent it (the coordinator takes it from the request's
// subject, never from the payload), so a host cannot describe another
// host's processes.
//
// Only the samples of images kept per process (node.per_process) carry
// their PID; a record is still published for every process, so a selector
// can tell a process that exists from one that does not.
//
// A per-thread node (node.per_thread) keeps those samples per thread: they
// carry the thread's ID (TID) where they would carry the PID, and it
// publishes a record per thread, of ProcessThreadVersion, whose PID is the
// TID and whose Process is the PID of the thread's process (the first
// thread's TID is the process's PID, so its record names itself).
type ProcessRecord struct {
	Version uint16
	PID     uint32
	// Epoch is the epoch the daemon first saw the process in, Start the
	// wall-clock time of that (ns since the Unix epoch). A PID is reused
	// after its process exits, so (PID, Epoch) names a process.
	Epoch  uint64
	Start  int64
	Binary string            // the main image's path, as the process mapped it
	Labels map[string]string // the user's process labels (CheckLabels); nil when none
	// Process is, in a record of ProcessThreadVersion, the PID of the
	// process whose thread PID is; 0 in a record of ProcessVersion, whose
	// samples are the whole process's.
	Process uint32
}

// ProcessVersion is the version ProcessRecord is written in, versioned apart
// from Batch and ImageRecord.
const ProcessVersion = 1

// ProcessThreadVersion is the version of a per-thread node's records: a
// ProcessVersion record and, after the labels, Process.
const ProcessThreadVersion = 2

const (
	processMagic      = "DCPX"
	processMinVersion = 1
	minLabelBytes     = 2 // key length, value length (a key has at least one byte more)
)

func checkProcessVersion(what string, v uint16) error {
	if v < processMinVersion || v > ProcessThreadVersion {
		return fmt.Errorf("wire: %s: %w %d (this build reads %d to %d)", what, ErrVersion, v, processMinVersion, ProcessThreadVersion)
	}
	return nil
}

// Thread reports whether r is a per-thread node's, whose PID is a thread's
// (Process is then its process's PID).
func (r *ProcessRecord) Thread() bool { return r.Version >= ProcessThreadVersion }

// ProcessPID is the PID of r's process: Process for a thread's record,
// else PID.
func (r *ProcessRecord) ProcessPID() uint32 {
	if r.Thread() {
		return r.Process
	}
	return r.PID
}

// Validate checks every rule of a ProcessRecord; Marshal and Unmarshal
// apply it. PID 0 is refused: it is the "no process" of samples not kept
// per process.
func (r *ProcessRecord) Validate() error {
	if err := checkProcessVersion("process record", r.Version); err != nil {
		return err
	}
	if r.PID == 0 {
		return fmt.Errorf("wire: process record: %w: PID 0", ErrInvalid)
	}
	switch {
	case r.Thread() && r.Process == 0:
		return fmt.Errorf("wire: process record %d: %w: a thread of process 0", r.PID, ErrInvalid)
	case !r.Thread() && r.Process != 0:
		return fmt.Errorf("wire: process record %d: %w: a process (%d) in a version %d record", r.PID, ErrInvalid, r.Process, r.Version)
	}
	if err := checkBinaryPath(r.Binary); err != nil {
		return fmt.Errorf("wire: process record %d: %w", r.PID, err)
	}
	if err := CheckLabels(r.Labels); err != nil {
		return fmt.Errorf("wire: process record %d: %w: %w", r.PID, ErrInvalid, err)
	}
	return nil
}

// checkBinaryPath: a non-empty path of at most MaxPathLen bytes of UTF-8
// with no control character, so that it prints on one line and a selector
// can name it.
func checkBinaryPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty binary", ErrInvalid)
	case len(p) > MaxPathLen:
		return fmt.Errorf("%w: binary of %d bytes (cap %d)", ErrTooLarge, len(p), MaxPathLen)
	case !utf8.ValidString(p) || strings.IndexFunc(p, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: binary %q: not UTF-8 or has a control character", ErrInvalid, p)
	}
	return nil
}

// MarshalBinary encodes a valid record: header, PID, epoch, start (zigzag),
// binary, labels in key order, Process (ProcessThreadVersion), trailer.
func (r *ProcessRecord) MarshalBinary() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	buf := appendHeader(make([]byte, 0, 32+len(r.Binary)), processMagic, r.Version)
	buf = binary.AppendUvarint(buf, uint64(r.PID))
	buf = binary.AppendUvarint(buf, r.Epoch)
	buf = binary.AppendUvarint(buf, zigzag(r.Start))
	buf = bincodec.AppendString(buf, r.Binary)
	buf = binary.AppendUvarint(buf, uint64(len(r.Labels)))
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		buf = bincodec.AppendString(bincodec.AppendString(buf, k), r.Labels[k])
	}
	if r.Thread() {
		buf = binary.AppendUvarint(buf, uint64(r.Process))
	}
	return appendTrailer(buf, 0), nil
}

// UnmarshalBinary decodes and validates a record from outside input. On
// error *r is left zero. Labels must come in strictly increasing key order
// (one encoding per record).
func (r *ProcessRecord) UnmarshalBinary(data []byte) error {
	*r = ProcessRecord{}
	body, v, err := frameVersions(data, processMagic, "process record", checkProcessVersion)
	if err != nil {
		return err
	}
	d := newDecoder(body)
	nr := ProcessRecord{Version: v}
	nr.PID = uint32(d.UvarintMax("pid", 1<<32-1))
	nr.Epoch = d.Uvarint("epoch")
	nr.Start = unzigzag(d.Uvarint("start"))
	nr.Binary = d.String("binary", MaxPathLen)
	n := d.Count("labels", MaxLabels, minLabelBytes)
	prev := ""
	for i := 0; i < n && d.Err() == nil; i++ {
		k := d.String("label key", MaxLabelNameLen)
		val := d.String("label value", MaxLabelValueLen)
		if d.Err() != nil {
			break
		}
		if i > 0 && k <= prev {
			d.Fail(ErrInvalid, "label %d: key %q not after %q", i, k, prev)
			break
		}
		prev = k
		if nr.Labels == nil {
			nr.Labels = make(map[string]string, n)
		}
		nr.Labels[k] = val
	}
	if nr.Thread() && d.Err() == nil {
		nr.Process = uint32(d.UvarintMax("process", 1<<32-1))
	}
	d.End()
	if err := d.Err(); err != nil {
		return decodeError("process record", err)
	}
	if err := nr.Validate(); err != nil {
		return err
	}
	*r = nr
	return nil
}

// zigzag maps a signed integer to an unsigned one with small magnitudes
// small, as encoding/binary's varints do.
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
