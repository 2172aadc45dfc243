package wire

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"dcpi/internal/bincodec"
)

// AllCPUs is the CPU of a daemon-level batch: samples and drops that belong
// to no one CPU's stream (for example, the daemon's own drop counters).
const AllCPUs = 0xFFFF

// Batch is a node daemon's self-contained report of the samples one CPU (or
// the daemon, CPU = AllCPUs) delivered over [Start, End) simulated cycles of
// one epoch, attributed to images (sec. 4.3 of the DCPI paper: "the daemon
// ... merges into per-image, per-event profiles").
//
// (Host, CPU, Seq) identifies a batch: Seq starts at 1 and is contiguous per
// (Host, CPU), so a consumer that has applied Seq n knows that n+1 is next,
// that n and below are redeliveries, and that anything above n+1 means a gap.
type Batch struct {
	Version    uint16
	Host       string
	Epoch      uint64
	CPU        uint16
	Seq        uint64
	Start, End uint64 // simulated cycles

	// Entries are sorted by (Image, Event, Offset, PID), unique, with
	// nonzero counts.
	Entries []Entry
	// Unknown are samples that no image map covered (sec. 4.3.2: the
	// "unknown" profile), sorted by (PID, PC, Event), unique, nonzero.
	Unknown []UnknownEntry
	// Drops are named counters of samples lost since the previous batch of
	// this (Host, CPU), e.g. "driver.overflow_full".
	Drops map[string]uint64

	// Sample accounting (version 2), cumulative over the publishing agent's
	// run on this CPU: Delivered counts the interrupts the hardware had
	// delivered when the batch was cut; Accounted the samples, dropped ones
	// included, in this run's batches up to and including this one. The
	// difference is what the driver still held. If the agent dies, its
	// successor reads the last batch that reached the cluster and reports
	// Delivered - Accounted as lost in the crash, so every sample the
	// hardware reported is accounted for. Both are 0 in version 1.
	Delivered, Accounted uint64

	// Stacks (version 3) count samples by call stack, when the node
	// records them; see StackEntry for how they conserve samples.
	Stacks []StackEntry
	// StackDrops are named counters of samples whose stacks were lost
	// since the previous batch of this (Host, CPU), e.g. a full stack
	// table; never counted in Drops, which are for samples lost entirely.
	StackDrops map[string]uint64

	// ProfileMe samples (version 4; profileme.go): per (image, offset,
	// PID) sums, the samples no image covered, and named drop counters
	// of samples lost since the previous batch of this (Host, CPU).
	Me        []MeEntry
	MeUnknown uint64
	MeDrops   map[string]uint64
	// ProfileMe section version 2 (profileme.go): the (PC, path-history)
	// counts, the history samples not kept, and the hot effective
	// addresses (or jump targets) per instruction.
	MeHist        []MeHistEntry
	MeHistDropped uint64
	MeAddrs       []MeAddrList
}

// Entry is one (image, offset, event, PID) count.
type Entry struct {
	Image  ImageKey
	Offset uint64 // from the image's load address
	Event  uint8
	PID    uint32 // 0 unless per-process profiles are kept for this image
	Count  uint64 // samples
}

// UnknownEntry is a sample count that could not be attributed to an image.
type UnknownEntry struct {
	PID   uint32
	PC    uint64
	Event uint8
	Count uint64
}

func compareEntries(a, b Entry) int {
	if c := a.Image.Compare(b.Image); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Event, b.Event); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
		return c
	}
	return cmp.Compare(a.PID, b.PID)
}

func compareUnknown(a, b UnknownEntry) int {
	if c := cmp.Compare(a.PID, b.PID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.PC, b.PC); c != 0 {
		return c
	}
	return cmp.Compare(a.Event, b.Event)
}

// Total is the number of samples the batch carries: entries and unknown, not
// drops. Validate guarantees it does not overflow.
func (b *Batch) Total() uint64 {
	var t uint64
	for i := range b.Entries {
		t += b.Entries[i].Count
	}
	for i := range b.Unknown {
		t += b.Unknown[i].Count
	}
	return t
}

// Normalize puts a batch a producer built in any order into canonical form:
// entries and unknown sorted, duplicates summed, zero counts and zero drops
// removed. It does not fix anything else Validate checks.
func (b *Batch) Normalize() {
	slices.SortFunc(b.Entries, compareEntries)
	b.Entries = mergeSorted(b.Entries, func(a, b Entry) bool { return compareEntries(a, b) == 0 },
		func(e *Entry) *uint64 { return &e.Count })
	slices.SortFunc(b.Unknown, compareUnknown)
	b.Unknown = mergeSorted(b.Unknown, func(a, b UnknownEntry) bool { return compareUnknown(a, b) == 0 },
		func(e *UnknownEntry) *uint64 { return &e.Count })
	for name, n := range b.Drops {
		if n == 0 {
			delete(b.Drops, name)
		}
	}
	b.normalizeStacks()
	b.normalizeMe()
}

// UnionLen is how many entries Normalize leaves of a and b together, both
// normalized (sorted, summed, no zero count): the size of a merge, counted
// without making it.
func UnionLen(a, b []Entry) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch c := compareEntries(a[i], b[j]); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			i, j = i+1, j+1
		}
		n++
	}
	return n + len(a) - i + len(b) - j
}

// mergeSorted sums runs of equal elements (saturating) and drops zeros.
//
// It takes elements by index, never a loop variable's address, which would
// make every element escape to the heap through count.
func mergeSorted[E any](s []E, eq func(a, b E) bool, count func(*E) *uint64) []E {
	out := s[:0]
	for i := range s {
		if len(out) > 0 && eq(out[len(out)-1], s[i]) {
			c := count(&out[len(out)-1])
			*c = satAdd(*c, *count(&s[i]))
			continue
		}
		out = append(out, s[i])
	}
	nz := out[:0]
	for i := range out {
		if *count(&out[i]) != 0 {
			nz = append(nz, out[i])
		}
	}
	return nz
}

func satAdd(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return ^uint64(0)
	}
	return s
}

// Validate checks every rule of a Batch; Marshal and Unmarshal apply it. The
// error wraps ErrVersion, ErrTooLarge or ErrInvalid and names the field.
func (b *Batch) Validate() error {
	if err := checkVersion("batch", b.Version); err != nil {
		return err
	}
	if b.Version < 2 && (b.Delivered != 0 || b.Accounted != 0) {
		return fmt.Errorf("wire: batch: %w: version %d carries no sample accounting", ErrInvalid, b.Version)
	}
	if b.Accounted > b.Delivered {
		return fmt.Errorf("wire: batch: %w: %d samples accounted of %d delivered", ErrInvalid, b.Accounted, b.Delivered)
	}
	if err := checkHost(b.Host); err != nil {
		return fmt.Errorf("wire: batch: %w", err)
	}
	if b.Seq == 0 {
		return fmt.Errorf("wire: batch: %w: seq 0 (sequences start at 1)", ErrInvalid)
	}
	if b.End < b.Start {
		return fmt.Errorf("wire: batch: %w: end %d before start %d", ErrInvalid, b.End, b.Start)
	}
	if len(b.Entries) > MaxEntries {
		return fmt.Errorf("wire: batch: %w: %d entries (cap %d)", ErrTooLarge, len(b.Entries), MaxEntries)
	}
	if len(b.Unknown) > MaxUnknown {
		return fmt.Errorf("wire: batch: %w: %d unknown entries (cap %d)", ErrTooLarge, len(b.Unknown), MaxUnknown)
	}
	if len(b.Drops) > MaxDrops {
		return fmt.Errorf("wire: batch: %w: %d drop counters (cap %d)", ErrTooLarge, len(b.Drops), MaxDrops)
	}
	var total uint64
	var carry uint64
	for i := range b.Entries {
		e := &b.Entries[i]
		if err := e.Image.Check(); err != nil {
			return fmt.Errorf("wire: batch: %w: entry %d: %v", ErrInvalid, i, err)
		}
		if e.Count == 0 {
			return fmt.Errorf("wire: batch: %w: entry %d: zero count", ErrInvalid, i)
		}
		if i > 0 && compareEntries(b.Entries[i-1], *e) >= 0 {
			return fmt.Errorf("wire: batch: %w: entry %d: not after entry %d in (image, event, offset, pid) order", ErrInvalid, i, i-1)
		}
		total, carry = bits.Add64(total, e.Count, 0)
		if carry != 0 {
			return fmt.Errorf("wire: batch: %w: entry %d: total count overflows 64 bits", ErrInvalid, i)
		}
	}
	for i := range b.Unknown {
		u := &b.Unknown[i]
		if u.Count == 0 {
			return fmt.Errorf("wire: batch: %w: unknown %d: zero count", ErrInvalid, i)
		}
		if i > 0 && compareUnknown(b.Unknown[i-1], *u) >= 0 {
			return fmt.Errorf("wire: batch: %w: unknown %d: not after unknown %d in (pid, pc, event) order", ErrInvalid, i, i-1)
		}
		total, carry = bits.Add64(total, u.Count, 0)
		if carry != 0 {
			return fmt.Errorf("wire: batch: %w: unknown %d: total count overflows 64 bits", ErrInvalid, i)
		}
	}
	for name := range b.Drops {
		if err := CheckDropName(name); err != nil {
			return fmt.Errorf("wire: batch: %w", err)
		}
	}
	if err := b.validateStacks(); err != nil {
		return err
	}
	return b.validateMe()
}

// CheckDropName reports whether name can name a drop counter: 1 to
// MaxDropNameLen bytes of printable ASCII without spaces.
func CheckDropName(name string) error {
	if name == "" || len(name) > MaxDropNameLen {
		return fmt.Errorf("%w: drop counter name of %d bytes (want 1..%d)", ErrInvalid, len(name), MaxDropNameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: drop counter name %q: byte %d is not printable ASCII", ErrInvalid, name, i)
		}
	}
	return nil
}

const batchMagic = "DCPB"

// Minimum encoded sizes, for count checks before allocation.
const (
	minEntryBytes   = 4 // event, offset delta, pid, count
	minGroupBytes   = 2 + 1 + 1 + minEntryBytes
	minUnknownBytes = 4
	minDropBytes    = 3
)

// MarshalBinary encodes a valid batch (see the package comment).
func (b *Batch) MarshalBinary() ([]byte, error) {
	return b.AppendBinary(make([]byte, 0, 64+6*len(b.Entries)+12*len(b.Unknown)))
}

// AppendBinary appends the encoding of a valid batch to buf.
func (b *Batch) AppendBinary(buf []byte) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	start := len(buf)
	buf = appendHeader(buf, batchMagic, b.Version)
	buf = bincodec.AppendString(buf, b.Host)
	buf = binary.AppendUvarint(buf, b.Epoch)
	buf = binary.AppendUvarint(buf, uint64(b.CPU))
	buf = binary.AppendUvarint(buf, b.Seq)
	buf = binary.AppendUvarint(buf, b.Start)
	buf = binary.AppendUvarint(buf, b.End)
	if b.Version >= 2 {
		buf = binary.AppendUvarint(buf, b.Delivered)
		buf = binary.AppendUvarint(buf, b.Accounted)
	}

	groups := 0
	for i := range b.Entries {
		if i == 0 || b.Entries[i].Image != b.Entries[i-1].Image {
			groups++
		}
	}
	buf = binary.AppendUvarint(buf, uint64(groups))
	for i := 0; i < len(b.Entries); {
		img := b.Entries[i].Image
		j := i + 1
		for j < len(b.Entries) && b.Entries[j].Image == img {
			j++
		}
		buf = img.appendTo(buf)
		buf = binary.AppendUvarint(buf, uint64(j-i))
		var prev uint64
		for k := i; k < j; k++ {
			e := &b.Entries[k]
			if k == i || e.Event != b.Entries[k-1].Event {
				prev = 0
			}
			buf = append(buf, e.Event)
			buf = binary.AppendUvarint(buf, e.Offset-prev)
			buf = binary.AppendUvarint(buf, uint64(e.PID))
			buf = binary.AppendUvarint(buf, e.Count)
			prev = e.Offset
		}
		i = j
	}

	buf = binary.AppendUvarint(buf, uint64(len(b.Unknown)))
	for i := range b.Unknown {
		u := &b.Unknown[i]
		buf = binary.AppendUvarint(buf, uint64(u.PID))
		buf = binary.AppendUvarint(buf, u.PC)
		buf = append(buf, u.Event)
		buf = binary.AppendUvarint(buf, u.Count)
	}

	buf = appendDrops(buf, b.Drops)
	if b.Version >= StackVersion {
		buf = b.appendStacks(buf)
	}
	if b.Version >= MeVersion {
		buf = b.appendMe(buf)
	}
	if len(buf)-start+trailerLen > MaxMessageBytes {
		return nil, fmt.Errorf("wire: batch: %w: encodes to %d bytes (cap %d)", ErrTooLarge, len(buf)-start+trailerLen, MaxMessageBytes)
	}
	return appendTrailer(buf, start), nil
}

// UnmarshalBinary decodes and validates a batch from outside input. On error
// *b is left zero.
func (b *Batch) UnmarshalBinary(data []byte) error {
	*b = Batch{}
	body, v, err := frame(data, batchMagic, "batch")
	if err != nil {
		return err
	}
	d := newDecoder(body)
	nb := Batch{Version: v}
	nb.Host = d.String("host", MaxHostLen)
	nb.Epoch = d.Uvarint("epoch")
	nb.CPU = uint16(d.UvarintMax("cpu", 0xFFFF))
	nb.Seq = d.Uvarint("seq")
	nb.Start = d.Uvarint("start")
	nb.End = d.Uvarint("end")
	if v >= 2 {
		nb.Delivered = d.Uvarint("delivered")
		nb.Accounted = d.Uvarint("accounted")
	}

	groups := d.Count("image groups", MaxEntries, minGroupBytes)
	for g := 0; g < groups && d.Err() == nil; g++ {
		img := decodeImageKey(d, "group image")
		if d.Err() == nil && g > 0 && img.Compare(nb.Entries[len(nb.Entries)-1].Image) <= 0 {
			// One group per image keeps the encoding canonical.
			d.Fail(ErrInvalid, "group %d image %v: not after group %d in image order", g, img, g-1)
		}
		n := d.Count("group entries", MaxEntries-len(nb.Entries), minEntryBytes)
		if d.Err() == nil && n == 0 {
			d.Fail(ErrInvalid, "group %d: no entries", g)
		}
		// n fits in the bytes left (count checked it), so growing by
		// it allocates at most 16 times the input, amortized over groups.
		nb.Entries = slices.Grow(nb.Entries, n)
		var prev uint64
		for k := 0; k < n && d.Err() == nil; k++ {
			e := Entry{Image: img}
			e.Event = d.Byte("event")
			if k == 0 || e.Event != nb.Entries[len(nb.Entries)-1].Event {
				prev = 0
			}
			delta := d.Uvarint("offset")
			e.Offset = prev + delta
			if e.Offset < prev {
				d.Fail(ErrMalformed, "group %d entry %d: offset overflows 64 bits", g, k)
			}
			e.PID = uint32(d.UvarintMax("pid", 0xFFFFFFFF))
			e.Count = d.Uvarint("count")
			prev = e.Offset
			nb.Entries = append(nb.Entries, e)
		}
	}

	nu := d.Count("unknown entries", MaxUnknown, minUnknownBytes)
	if nu > 0 {
		nb.Unknown = make([]UnknownEntry, 0, nu)
	}
	for i := 0; i < nu && d.Err() == nil; i++ {
		var u UnknownEntry
		u.PID = uint32(d.UvarintMax("unknown pid", 0xFFFFFFFF))
		u.PC = d.Uvarint("unknown pc")
		u.Event = d.Byte("unknown event")
		u.Count = d.Uvarint("unknown count")
		nb.Unknown = append(nb.Unknown, u)
	}

	nb.Drops = decodeDrops(d, "drop")
	if v >= StackVersion && d.Err() == nil {
		decodeStacks(d, &nb)
	}
	if v >= MeVersion && d.Err() == nil {
		decodeMe(d, &nb)
	}
	d.End()
	if err := d.Err(); err != nil {
		return decodeError("batch", err)
	}
	if err := nb.Validate(); err != nil {
		return err
	}
	*b = nb
	return nil
}
