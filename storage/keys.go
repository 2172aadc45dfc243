package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"dcpi/wire"
)

// Table prefixes (doc.go has the schema).
const (
	tCounts   = 'c'
	tFleet    = 'f'
	tHosts    = 'h'
	tSummary  = 's'
	tUnknown  = 'u'
	tDrops    = 'd'
	tApplied  = 'a'
	tImages   = 'i'
	tEpochs   = 'e'
	tMeta     = 'm'
	classKnow = 'k'
	classUnkn = 'u'
)

const keyLen = len(wire.ImageKey{})

// Fixed parts of keys: prefix byte, epoch, event, image, offset.
const (
	offEpoch  = 1
	offEvent  = offEpoch + 8
	offImage  = offEvent + 1
	offOffset = offImage + keyLen
	offHost   = offOffset + 8 // in 'c' keys; 'f' keys end here
)

func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

func appendHost(b []byte, host string) []byte { return append(append(b, host...), 0) }

func countsKey(buf []byte, epoch uint64, e *wire.Entry, host string) []byte {
	buf = append(buf[:0], tCounts)
	buf = appendU64(buf, epoch)
	buf = append(buf, e.Event)
	buf = append(buf, e.Image[:]...)
	buf = appendU64(buf, e.Offset)
	buf = appendHost(buf, host)
	return binary.BigEndian.AppendUint32(buf, e.PID)
}

func fleetKey(buf []byte, epoch uint64, e *wire.Entry) []byte {
	buf = append(buf[:0], tFleet)
	buf = appendU64(buf, epoch)
	buf = append(buf, e.Event)
	buf = append(buf, e.Image[:]...)
	return appendU64(buf, e.Offset)
}

func summaryKey(epoch uint64, event uint8, host string, class byte) []byte {
	b := append(make([]byte, 0, 12+len(host)), tSummary)
	b = appendU64(b, epoch)
	b = append(b, event)
	b = appendHost(b, host)
	return append(b, class)
}

func unknownKey(buf []byte, epoch uint64, host string, u *wire.UnknownEntry) []byte {
	buf = append(buf[:0], tUnknown)
	buf = appendU64(buf, epoch)
	buf = append(buf, u.Event)
	buf = appendHost(buf, host)
	buf = binary.BigEndian.AppendUint32(buf, u.PID)
	return appendU64(buf, u.PC)
}

func dropKey(epoch uint64, host, name string) []byte {
	b := append(make([]byte, 0, 11+len(host)+len(name)), tDrops)
	b = appendU64(b, epoch)
	b = appendHost(b, host)
	return append(b, name...)
}

func appliedKey(host string, cpu uint16) []byte {
	b := append(make([]byte, 0, 4+len(host)), tApplied)
	b = appendHost(b, host)
	return binary.BigEndian.AppendUint16(b, cpu)
}

func imageKey(k wire.ImageKey) []byte { return append([]byte{tImages}, k[:]...) }

func epochKey(n uint64) []byte { return appendU64([]byte{tEpochs}, n) }

var schemaKey = []byte{tMeta, 's', 'c', 'h', 'e', 'm', 'a'}

// prefixEnd is the first key after every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // no upper bound
}

// cutHost splits "host\0rest".
func cutHost(b []byte) (host string, rest []byte, ok bool) {
	i := bytes.IndexByte(b, 0)
	if i <= 0 {
		return "", nil, false
	}
	return string(b[:i]), b[i+1:], true
}

// hostsPrefix is 'h' epoch host\0: the range of one host's counts in an
// epoch.
func hostsPrefix(epoch uint64, host string) []byte {
	b := make([]byte, 0, 1+8+len(host)+1+1+keyLen+8+4)
	b = append(b, tHosts)
	b = appendU64(b, epoch)
	return appendHost(b, host)
}

func hostsKey(buf []byte, epoch uint64, host string, e *wire.Entry) []byte {
	buf = append(buf[:0], tHosts)
	buf = appendU64(buf, epoch)
	buf = appendHost(buf, host)
	buf = append(buf, e.Event)
	buf = append(buf, e.Image[:]...)
	buf = appendU64(buf, e.Offset)
	return binary.BigEndian.AppendUint32(buf, e.PID)
}

// countsRow is a decoded 'c', 'f' or 'h' key.
type countsRow struct {
	epoch  uint64
	event  uint8
	image  wire.ImageKey
	offset uint64
	host   string // "" in 'f'
	pid    uint32
}

func decodeCountsKey(k []byte) (countsRow, error) {
	var r countsRow
	if len(k) < offHost || (k[0] != tCounts && k[0] != tFleet) {
		return r, fmt.Errorf("%w: counts key %x: short", ErrCorrupt, k)
	}
	r.epoch = binary.BigEndian.Uint64(k[offEpoch:])
	r.event = k[offEvent]
	copy(r.image[:], k[offImage:offOffset])
	r.offset = binary.BigEndian.Uint64(k[offOffset:])
	if k[0] == tFleet {
		if len(k) != offHost {
			return r, fmt.Errorf("%w: fleet key %x: %d bytes, want %d", ErrCorrupt, k, len(k), offHost)
		}
		return r, nil
	}
	host, rest, ok := cutHost(k[offHost:])
	if !ok || len(rest) != 4 {
		return r, fmt.Errorf("%w: counts key %x: bad host or pid", ErrCorrupt, k)
	}
	r.host, r.pid = host, binary.BigEndian.Uint32(rest)
	return r, nil
}

// decodeHostsKey decodes an 'h' key.
func decodeHostsKey(k []byte) (countsRow, error) {
	var r countsRow
	if len(k) < offEvent || k[0] != tHosts {
		return r, fmt.Errorf("%w: hosts key %x: short", ErrCorrupt, k)
	}
	r.epoch = binary.BigEndian.Uint64(k[offEpoch:])
	host, rest, ok := cutHost(k[offEvent:])
	if !ok || len(rest) != 1+keyLen+8+4 {
		return r, fmt.Errorf("%w: hosts key %x: bad host or length", ErrCorrupt, k)
	}
	r.host = host
	r.event = rest[0]
	copy(r.image[:], rest[1:1+keyLen])
	r.offset = binary.BigEndian.Uint64(rest[1+keyLen:])
	r.pid = binary.BigEndian.Uint32(rest[1+keyLen+8:])
	return r, nil
}

// decodeCount reads a counter value.
func decodeCount(k, v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: key %x: counter of %d bytes, want 8", ErrCorrupt, k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
