package wire

import (
	"encoding/binary"
	"slices"

	"dcpi/internal/bincodec"
)

// MaxStackFrameTable caps the unique frames of one batch's frame table.
// Every frame is referenced by some stack, so it is at most MaxStacks ×
// MaxStackFrames; a real batch has a few thousand.
const MaxStackFrameTable = 1 << 20

// Minimum encoded sizes of the stack section, for count checks before
// allocation.
const (
	minFrameGroupBytes = 2 + 1 + 1 // image key (the zero key is 2 bytes), n, one offset
	minFrameBytes      = 1         // offset delta
	minStackBytes      = 6         // pid, event, flags, depth, one frame index, count
)

// stackTruncated is the flags bit of a truncated stack; no other bit is
// defined, and a decoder refuses them so the encoding stays canonical.
const stackTruncated = 1

// frameTable lists a batch's unique frames in CompareFrames order and maps
// each to its index.
func frameTable(stacks []StackEntry) ([]Frame, map[Frame]uint64) {
	idx := map[Frame]uint64{}
	var frames []Frame
	for i := range stacks {
		for _, f := range stacks[i].Frames {
			if _, ok := idx[f]; !ok {
				idx[f] = 0
				frames = append(frames, f)
			}
		}
	}
	slices.SortFunc(frames, CompareFrames)
	for i, f := range frames {
		idx[f] = uint64(i)
	}
	return frames, idx
}

// appendStacks writes the version-3 stack section (see the package
// comment): the frame table in image groups, the stacks as frame indices,
// the stack drops by name.
func (b *Batch) appendStacks(buf []byte) []byte {
	frames, idx := frameTable(b.Stacks)
	groups := 0
	for i := range frames {
		if i == 0 || frames[i].Image != frames[i-1].Image {
			groups++
		}
	}
	buf = binary.AppendUvarint(buf, uint64(groups))
	for i := 0; i < len(frames); {
		img := frames[i].Image
		j := i + 1
		for j < len(frames) && frames[j].Image == img {
			j++
		}
		buf = img.appendTo(buf)
		buf = binary.AppendUvarint(buf, uint64(j-i))
		var prev uint64
		for k := i; k < j; k++ {
			// Offsets ascend strictly within a group: the first is
			// absolute, the rest are deltas of at least 1, stored less 1.
			if k == i {
				buf = binary.AppendUvarint(buf, frames[k].Offset)
			} else {
				buf = binary.AppendUvarint(buf, frames[k].Offset-prev-1)
			}
			prev = frames[k].Offset
		}
		i = j
	}
	buf = binary.AppendUvarint(buf, uint64(len(b.Stacks)))
	for i := range b.Stacks {
		s := &b.Stacks[i]
		buf = binary.AppendUvarint(buf, uint64(s.PID))
		buf = append(buf, s.Event)
		var flags byte
		if s.Truncated {
			flags |= stackTruncated
		}
		buf = append(buf, flags)
		buf = binary.AppendUvarint(buf, uint64(len(s.Frames)))
		for _, f := range s.Frames {
			buf = binary.AppendUvarint(buf, idx[f])
		}
		buf = binary.AppendUvarint(buf, s.Count)
	}
	return appendDrops(buf, b.StackDrops)
}

// appendDrops writes named counters sorted by name.
func appendDrops(buf []byte, drops map[string]uint64) []byte {
	names := make([]string, 0, len(drops))
	for name := range drops {
		names = append(names, name)
	}
	slices.Sort(names)
	buf = binary.AppendUvarint(buf, uint64(len(names)))
	for _, name := range names {
		buf = bincodec.AppendString(buf, name)
		buf = binary.AppendUvarint(buf, drops[name])
	}
	return buf
}

// decodeDrops reads what appendDrops wrote; nil for none.
func decodeDrops(d *bincodec.Decoder, what string) map[string]uint64 {
	nd := d.Count(what+" counters", MaxDrops, minDropBytes)
	var drops map[string]uint64
	if nd > 0 {
		drops = make(map[string]uint64, nd)
	}
	prevName := ""
	for i := 0; i < nd && d.Err() == nil; i++ {
		name := d.String(what+" counter name", MaxDropNameLen)
		n := d.Uvarint(what + " count")
		if d.Err() == nil && i > 0 && name <= prevName {
			d.Fail(ErrInvalid, "%s counter %q: not after %q in name order", what, name, prevName)
		}
		prevName = name
		drops[name] = n
	}
	return drops
}

// decodeFrameImage reads a frame group's image: a key, or the zero key
// (kind 0, length 0) of frames no image map covered.
func decodeFrameImage(d *bincodec.Decoder) ImageKey {
	kind := d.Byte("frame image kind")
	n := d.Byte("frame image length")
	if d.Err() != nil || kind == 0 && n == 0 {
		return ImageKey{}
	}
	b := d.Bytes("frame image", int(n))
	if d.Err() != nil {
		return ImageKey{}
	}
	k, err := NewImageKey(KeyKind(kind), b)
	if err != nil {
		d.Fail(ErrInvalid, "frame image: %v", err)
	}
	return k
}

// decodeStacks reads the version-3 stack section into nb.
func decodeStacks(d *bincodec.Decoder, nb *Batch) {
	groups := d.Count("frame groups", MaxStackFrameTable, minFrameGroupBytes)
	var frames []Frame
	for g := 0; g < groups && d.Err() == nil; g++ {
		img := decodeFrameImage(d)
		if d.Err() == nil && g > 0 && img.Compare(frames[len(frames)-1].Image) <= 0 {
			d.Fail(ErrInvalid, "frame group %d image %v: not after group %d in image order", g, img, g-1)
		}
		n := d.Count("frame group frames", MaxStackFrameTable-len(frames), minFrameBytes)
		if d.Err() == nil && n == 0 {
			d.Fail(ErrInvalid, "frame group %d: no frames", g)
		}
		frames = slices.Grow(frames, n)
		var prev uint64
		for k := 0; k < n && d.Err() == nil; k++ {
			off := d.Uvarint("frame offset")
			if k > 0 {
				next := prev + off + 1
				if off == ^uint64(0) || next <= prev {
					d.Fail(ErrMalformed, "frame group %d frame %d: offset overflows 64 bits", g, k)
				}
				off = next
			}
			prev = off
			frames = append(frames, Frame{Image: img, Offset: off})
		}
	}
	used := make([]bool, len(frames))
	ns := d.Count("stacks", MaxStacks, minStackBytes)
	if ns > 0 && d.Err() == nil {
		nb.Stacks = make([]StackEntry, 0, ns)
	}
	for i := 0; i < ns && d.Err() == nil; i++ {
		var s StackEntry
		s.PID = uint32(d.UvarintMax("stack pid", 0xFFFFFFFF))
		s.Event = d.Byte("stack event")
		switch flags := d.Byte("stack flags"); {
		case flags&^stackTruncated != 0:
			d.Fail(ErrInvalid, "stack %d: unknown flags %#x", i, flags)
		default:
			s.Truncated = flags&stackTruncated != 0
		}
		depth := d.Count("stack frames", MaxStackFrames, minFrameBytes)
		if d.Err() == nil && depth == 0 {
			d.Fail(ErrInvalid, "stack %d: no frames", i)
		}
		if d.Err() == nil {
			s.Frames = make([]Frame, depth)
		}
		for j := 0; j < depth && d.Err() == nil; j++ {
			k := d.Uvarint("stack frame index")
			if d.Err() == nil && k >= uint64(len(frames)) {
				d.Fail(ErrInvalid, "stack %d frame %d: index %d past the frame table (%d frames)", i, j, k, len(frames))
				break
			}
			s.Frames[j] = frames[k]
			used[k] = true
		}
		s.Count = d.Uvarint("stack count")
		nb.Stacks = append(nb.Stacks, s)
	}
	if d.Err() == nil {
		// An unreferenced frame would not be written back: refuse it,
		// so the encoding stays canonical.
		if k := slices.Index(used, false); k >= 0 {
			d.Fail(ErrInvalid, "frame %d: referenced by no stack", k)
		}
	}
	nb.StackDrops = decodeDrops(d, "stack drop")
}
