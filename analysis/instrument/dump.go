package instrument

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A dump file is a sequence of records, one per process exit (and one
// before each execve), appended with O_APPEND so forked children add
// theirs. A record is a 64-byte header then the counters, little-endian:
//
//	0  magic "DCPIPPD\x00"
//	8  version (uint32), 12 mode (uint32: 1 pixie)
//	16 pid (uint64, from getxpid at dump time)
//	24 image hash (16 bytes: the manifest's hash)
//	40 number of counters n (uint64)
//	48, 56 reserved (zero)
//	64 n counters (uint64 each)
const (
	dumpMagic      = "DCPIPPD\x00"
	headerSize     = 64
	headerPIDOff   = 16
	headerHashOff  = 24
	headerCountOff = 40
	modePixie      = 1
)

// Record is one process's counters.
type Record struct {
	PID      uint64
	Counters []uint64
}

// ErrMismatch is returned (wrapped) when a dump was written by another
// instrumented image than the one given.
var ErrMismatch = errors.New("dump does not belong to this instrumented image")

// header returns the record header the runtime writes (pid filled at
// run time).
func header(mode uint32, hash [16]byte, n int) []byte {
	h := make([]byte, headerSize)
	copy(h, dumpMagic)
	binary.LittleEndian.PutUint32(h[8:], ManifestVersion)
	binary.LittleEndian.PutUint32(h[12:], mode)
	copy(h[headerHashOff:], hash[:])
	binary.LittleEndian.PutUint64(h[headerCountOff:], uint64(n))
	return h
}

// ParseDump splits a dump into records, checking each against the image
// hash and counter count the manifest gives. A truncated or foreign
// record is an error, never a silent short count.
func ParseDump(data []byte, hash [16]byte, counters int) ([]Record, error) {
	var out []Record
	for off := 0; off < len(data); {
		rest := data[off:]
		if len(rest) < headerSize {
			return nil, fmt.Errorf("dump: record at byte %d: %d bytes, shorter than a header", off, len(rest))
		}
		if string(rest[:8]) != dumpMagic {
			return nil, fmt.Errorf("dump: record at byte %d: bad magic", off)
		}
		if v := binary.LittleEndian.Uint32(rest[8:]); v != ManifestVersion {
			return nil, fmt.Errorf("dump: record at byte %d: version %d, this reader knows %d", off, v, ManifestVersion)
		}
		if [16]byte(rest[headerHashOff:headerHashOff+16]) != hash {
			return nil, fmt.Errorf("dump: record at byte %d: %w", off, ErrMismatch)
		}
		n := binary.LittleEndian.Uint64(rest[headerCountOff:])
		if n != uint64(counters) {
			return nil, fmt.Errorf("dump: record at byte %d: %d counters, the manifest says %d", off, n, counters)
		}
		if uint64(len(rest)-headerSize)/8 < n {
			return nil, fmt.Errorf("dump: record at byte %d: truncated (%d counters expected)", off, n)
		}
		r := Record{PID: binary.LittleEndian.Uint64(rest[headerPIDOff:]), Counters: make([]uint64, n)}
		for i := range r.Counters {
			r.Counters[i] = binary.LittleEndian.Uint64(rest[headerSize+8*i:])
		}
		out = append(out, r)
		off += headerSize + 8*int(n)
	}
	return out, nil
}
