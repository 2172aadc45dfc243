package storage

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	"dcpi/internal/bincodec"
	"dcpi/wire"
)

// Stack tables (doc.go has the schema).
const (
	tStacks       = 't' // stack ID → stack record
	tStackFleet   = 'g' // epoch event stackID → samples
	tStackHosts   = 'x' // epoch host\0 event stackID pid → samples
	tStackDrops   = 'p' // epoch host\0 name → samples whose stack was lost
	tStackSummary = 'q' // epoch event host\0 → samples counted by stacks
)

// stackRecordVersion is the first byte of a stack record.
const stackRecordVersion = 1

// maxStackProbes bounds the IDs tried for one stack after its hash's own.
// Two stacks share a 64-bit hash about once in 2^32 distinct stacks; a
// run of 64 taken IDs means something is wrong, not bad luck.
const maxStackProbes = 64

// Stack is a stored call stack: its content-addressed ID and its frames,
// leaf first (wire.StackEntry's).
type Stack struct {
	ID        uint64
	Truncated bool
	Frames    []wire.Frame
}

// Leaf is the stack's sampled frame, the one the flat profile counts.
func (s *Stack) Leaf() wire.Frame { return s.Frames[0] }

// encodeStack is a stack's record: version, flags (bit 0 truncated), the
// distinct images of its frames (34 bytes each), then its frames as (image
// index, offset). The record is also what the ID hashes, so two stacks have
// the same record only if they are the same stack.
func encodeStack(truncated bool, frames []wire.Frame) []byte {
	var imgs []wire.ImageKey
	idx := make([]uint64, len(frames))
	for i, f := range frames {
		k := -1
		for j, img := range imgs {
			if img == f.Image {
				k = j
				break
			}
		}
		if k < 0 {
			k = len(imgs)
			imgs = append(imgs, f.Image)
		}
		idx[i] = uint64(k)
	}
	flags := byte(0)
	if truncated {
		flags = 1
	}
	b := append(make([]byte, 0, 4+keyLen*len(imgs)+6*len(frames)), stackRecordVersion, flags)
	b = binary.AppendUvarint(b, uint64(len(imgs)))
	for _, img := range imgs {
		b = append(b, img[:]...)
	}
	b = binary.AppendUvarint(b, uint64(len(frames)))
	for i, f := range frames {
		b = binary.AppendUvarint(b, idx[i])
		b = binary.AppendUvarint(b, f.Offset)
	}
	return b
}

// decodeStack reads a stack record.
func decodeStack(id uint64, v []byte) (Stack, error) {
	st := Stack{ID: id}
	if len(v) < 2 || v[0] != stackRecordVersion || v[1]&^1 != 0 {
		return st, fmt.Errorf("%w: stack %016x: bad version or flags", ErrCorrupt, id)
	}
	st.Truncated = v[1] == 1
	d := bincodec.NewDecoder(v[2:], 2)
	ni := d.Count("images", wire.MaxStackFrames, keyLen)
	imgs := make([]wire.ImageKey, ni)
	for i := 0; i < ni && d.Err() == nil; i++ {
		copy(imgs[i][:], d.Bytes("image", keyLen))
	}
	nf := d.Count("frames", wire.MaxStackFrames, 2)
	if d.Err() == nil && nf == 0 {
		d.Fail(ErrCorrupt, "no frames")
	}
	st.Frames = make([]wire.Frame, 0, nf)
	for i := 0; i < nf && d.Err() == nil; i++ {
		k := d.UvarintMax("image index", uint64(max(ni-1, 0)))
		off := d.Uvarint("offset")
		if d.Err() != nil {
			break // k is no index then, and imgs may be empty
		}
		if ni == 0 {
			d.Fail(ErrCorrupt, "frame without images")
			break
		}
		st.Frames = append(st.Frames, wire.Frame{Image: imgs[k], Offset: off})
	}
	d.End()
	if err := d.Err(); err != nil {
		return Stack{ID: id}, fmt.Errorf("%w: stack %016x: %v", ErrCorrupt, id, err)
	}
	return st, nil
}

// stackHash is the first ID a stack record tries: 64 bits of its SHA-256.
// Tests replace it to force collisions.
var stackHash = func(rec []byte) uint64 {
	sum := sha256.Sum256(rec)
	return binary.BigEndian.Uint64(sum[:8])
}

func stackKey(id uint64) []byte { return appendU64([]byte{tStacks}, id) }

func stackFleetKey(epoch uint64, event uint8, id uint64) []byte {
	b := append(make([]byte, 0, 18), tStackFleet)
	b = appendU64(b, epoch)
	b = append(b, event)
	return appendU64(b, id)
}

func stackHostsKey(epoch uint64, host string, event uint8, id uint64, pid uint32) []byte {
	b := append(make([]byte, 0, 24+len(host)), tStackHosts)
	b = appendU64(b, epoch)
	b = appendHost(b, host)
	b = append(b, event)
	b = appendU64(b, id)
	return binary.BigEndian.AppendUint32(b, pid)
}

func stackDropKey(epoch uint64, host, name string) []byte {
	b := append(make([]byte, 0, 11+len(host)+len(name)), tStackDrops)
	b = appendU64(b, epoch)
	b = appendHost(b, host)
	return append(b, name...)
}

func stackSummaryKey(epoch uint64, event uint8, host string) []byte {
	b := append(make([]byte, 0, 11+len(host)), tStackSummary)
	b = appendU64(b, epoch)
	b = append(b, event)
	return appendHost(b, host)
}

// stackCache maps committed stack records to their IDs, so a stack seen
// before costs no read of the stack table. It holds at most
// maxCachedStacks records and starts over when full.
type stackCache struct {
	mu  sync.Mutex // held by an apply from assigning IDs to committing
	ids map[string]uint64
}

const maxCachedStacks = 1 << 16

// stackAssigner gives one apply call's stacks their IDs: the ID a record
// already has in the table, or the first free one from its hash on. New
// records are written in the call's Pebble batch (pending until then).
type stackAssigner struct {
	db      *DB
	pending map[uint64][]byte // new records of this call, by ID
	byRec   map[string]uint64 // this call's records, new and found
}

func (a *stackAssigner) id(rec []byte) (uint64, error) {
	if id, ok := a.byRec[string(rec)]; ok {
		return id, nil
	}
	if id, ok := a.db.stacks.ids[string(rec)]; ok {
		a.byRec[string(rec)] = id
		return id, nil
	}
	h := stackHash(rec)
	for probe := uint64(0); probe <= maxStackProbes; probe++ {
		id := h + probe
		if have, ok := a.pending[id]; ok {
			if bytes.Equal(have, rec) {
				return id, nil
			}
			continue // a collision within the call
		}
		v, ok, err := a.db.get(stackKey(id))
		if err != nil {
			return 0, fmt.Errorf("storage: read stack %016x: %w", id, err)
		}
		if ok && !bytes.Equal(v, rec) {
			continue // a collision: the ID is another stack's
		}
		if !ok {
			a.pending[id] = rec
		}
		a.byRec[string(rec)] = id
		return id, nil
	}
	return 0, fmt.Errorf("%w: stack hash %016x: %d IDs from it all taken by other stacks", ErrCorrupt, h, maxStackProbes+1)
}

// committed adds the call's records to the cache once its batch is durable.
func (a *stackAssigner) committed() {
	c := &a.db.stacks
	if len(c.ids)+len(a.byRec) > maxCachedStacks {
		c.ids = nil
	}
	if c.ids == nil {
		c.ids = make(map[string]uint64, len(a.byRec))
	}
	for rec, id := range a.byRec {
		c.ids[rec] = id
	}
}

// addStacks collects the merges of a valid batch's stacks, whose IDs are
// ids[i] for b.Stacks[i], and its stack drops.
func (w *batchWriter) addStacks(b *wire.Batch, ids []uint64) {
	var total [256]uint64
	for i := range b.Stacks {
		s := &b.Stacks[i]
		w.misc.add(stackFleetKey(b.Epoch, s.Event, ids[i]), s.Count)
		w.misc.add(stackHostsKey(b.Epoch, b.Host, s.Event, ids[i], s.PID), s.Count)
		total[s.Event] += s.Count // Validate bounds the batch's stack total
	}
	for ev, n := range total {
		if n != 0 {
			w.misc.add(stackSummaryKey(b.Epoch, uint8(ev), b.Host), n)
		}
	}
	for name, n := range b.StackDrops {
		if n != 0 {
			w.misc.add(stackDropKey(b.Epoch, b.Host, name), n)
		}
	}
}
