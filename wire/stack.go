package wire

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
)

// StackVersion is the first batch version that carries call stacks
// (Batch.Stacks and Batch.StackDrops).
const StackVersion = 3

// FlatVersion is the version a producer writes for a batch without stacks:
// version 3's empty stack section would only add bytes, and version 2
// keeps every flat batch's encoding (and the golden files holding them) as
// it was.
const FlatVersion = 2

// Caps on stacks from outside input.
const (
	MaxStacks      = 1 << 18 // Batch.Stacks
	MaxStackFrames = 64      // StackEntry.Frames: the driver's unwind depth cap
)

// Frame is one level of a sampled call stack, attributed like an Entry: an
// image and an offset from its load address. A frame no image map covered
// has the zero Image and its raw PC in Offset.
type Frame struct {
	Image  ImageKey
	Offset uint64
}

// StackEntry counts the samples of one (PID, event, call stack). Frames are
// leaf first: Frames[0] is the sampled PC itself, the flat profile's PC, and
// each later frame is the return address the unwinder found for the frame
// before it (the instruction after the call, as in a return address; tools
// that want the call site subtract 4). Truncated says the unwinder stopped
// before the outermost frame (the depth cap, or a frame it could not
// unwind); such a stack is still counted, as a partial chain.
//
// Stacks are a second, independent view of the same samples as Entries and
// Unknown: with stacks on, every sample the hardware delivered to a CPU
// ends up in exactly one StackEntry count or in one StackDrops counter, over
// the stream's batches taken together (the driver's stack table and its
// flat table drain at different times, so a single batch need not balance).
type StackEntry struct {
	PID       uint32
	Event     uint8
	Truncated bool
	Frames    []Frame
	Count     uint64
}

// CompareFrames orders frames by image, then offset.
func CompareFrames(a, b Frame) int {
	if c := a.Image.Compare(b.Image); c != 0 {
		return c
	}
	return cmp.Compare(a.Offset, b.Offset)
}

// compareStacks is the canonical order of Batch.Stacks: (PID, event, frames
// leaf first, truncated).
func compareStacks(a, b StackEntry) int {
	if c := cmp.Compare(a.PID, b.PID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Event, b.Event); c != 0 {
		return c
	}
	if c := slices.CompareFunc(a.Frames, b.Frames, CompareFrames); c != 0 {
		return c
	}
	switch {
	case a.Truncated == b.Truncated:
		return 0
	case !a.Truncated:
		return -1
	}
	return 1
}

// normalizeStacks sorts stacks canonically, sums duplicates and drops zero
// counts and zero stack drops.
func (b *Batch) normalizeStacks() {
	slices.SortFunc(b.Stacks, compareStacks)
	b.Stacks = mergeSorted(b.Stacks, func(x, y StackEntry) bool { return compareStacks(x, y) == 0 },
		func(e *StackEntry) *uint64 { return &e.Count })
	for name, n := range b.StackDrops {
		if n == 0 {
			delete(b.StackDrops, name)
		}
	}
}

// StackTotal is the number of samples the batch's stacks count (not stack
// drops). Validate guarantees it does not overflow.
func (b *Batch) StackTotal() uint64 {
	var t uint64
	for i := range b.Stacks {
		t += b.Stacks[i].Count
	}
	return t
}

// validateStacks checks the stack rules of Validate.
func (b *Batch) validateStacks() error {
	if b.Version < StackVersion && (len(b.Stacks) != 0 || len(b.StackDrops) != 0) {
		return fmt.Errorf("wire: batch: %w: version %d carries no stacks", ErrInvalid, b.Version)
	}
	if len(b.Stacks) > MaxStacks {
		return fmt.Errorf("wire: batch: %w: %d stacks (cap %d)", ErrTooLarge, len(b.Stacks), MaxStacks)
	}
	if len(b.StackDrops) > MaxDrops {
		return fmt.Errorf("wire: batch: %w: %d stack drop counters (cap %d)", ErrTooLarge, len(b.StackDrops), MaxDrops)
	}
	var total, carry uint64
	for i := range b.Stacks {
		s := &b.Stacks[i]
		if len(s.Frames) == 0 {
			return fmt.Errorf("wire: batch: %w: stack %d: no frames", ErrInvalid, i)
		}
		if len(s.Frames) > MaxStackFrames {
			return fmt.Errorf("wire: batch: %w: stack %d: %d frames (cap %d)", ErrTooLarge, i, len(s.Frames), MaxStackFrames)
		}
		for j := range s.Frames {
			if s.Frames[j].Image == (ImageKey{}) {
				continue
			}
			if err := s.Frames[j].Image.Check(); err != nil {
				return fmt.Errorf("wire: batch: %w: stack %d frame %d: %v", ErrInvalid, i, j, err)
			}
		}
		if s.Count == 0 {
			return fmt.Errorf("wire: batch: %w: stack %d: zero count", ErrInvalid, i)
		}
		if i > 0 && compareStacks(b.Stacks[i-1], *s) >= 0 {
			return fmt.Errorf("wire: batch: %w: stack %d: not after stack %d in (pid, event, frames, truncated) order", ErrInvalid, i, i-1)
		}
		total, carry = bits.Add64(total, s.Count, 0)
		if carry != 0 {
			return fmt.Errorf("wire: batch: %w: stack %d: total count overflows 64 bits", ErrInvalid, i)
		}
	}
	for name := range b.StackDrops {
		if err := CheckDropName(name); err != nil {
			return fmt.Errorf("wire: batch: stack drops: %w", err)
		}
	}
	return nil
}
