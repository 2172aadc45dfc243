package storage

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"github.com/cockroachdb/pebble/v2"
)

// counterMerger adds 8-byte big-endian counters. Pebble stores its name and
// refuses to open the database with another, so a change of value format
// must change the name.
var counterMerger = &pebble.Merger{
	Name: "dcpi.counter.v1",
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		m := &counterSum{}
		if err := m.add(value); err != nil {
			return nil, err
		}
		return m, nil
	},
}

// counterSum is a pebble.ValueMerger. Addition is commutative, so newer and
// older operands are treated alike; it saturates rather than wraps, so a
// (never expected) overflow shows as 2^64-1 instead of a small count.
type counterSum struct{ sum uint64 }

func (m *counterSum) add(v []byte) error {
	if len(v) != 8 {
		// A malformed operand fails the read (or compaction) that meets
		// it rather than being guessed at.
		return fmt.Errorf("%w: counter merge operand of %d bytes, want 8", ErrCorrupt, len(v))
	}
	s, c := bits.Add64(m.sum, binary.BigEndian.Uint64(v), 0)
	if c != 0 {
		s = ^uint64(0)
	}
	m.sum = s
	return nil
}

func (m *counterSum) MergeNewer(v []byte) error { return m.add(v) }
func (m *counterSum) MergeOlder(v []byte) error { return m.add(v) }

func (m *counterSum) Finish(includesBase bool) ([]byte, io.Closer, error) {
	return binary.BigEndian.AppendUint64(nil, m.sum), nil, nil
}

func encodeCount(buf *[8]byte, n uint64) []byte {
	binary.BigEndian.PutUint64(buf[:], n)
	return buf[:]
}
