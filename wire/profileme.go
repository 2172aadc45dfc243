package wire

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"dcpi/internal/bincodec"
)

// ProfileMe samples in a batch (version 4, MeVersion): a CPU's instruction
// samples (hwsim's ProfileMe on the 21164, docs/profileme.md) aggregated by
// the driver per (process, PC) and attributed by the daemon to (image,
// offset). They ride in the batch of the same (Host, CPU) stream, so they
// share its sequence numbers and its exactly-once application, and they
// are an independent view: ProfileMe samples are not counter samples, and
// Total, Delivered and Accounted leave them out. Per stream, over the
// batches taken together, the samples in MeEntries, plus MeUnknown, plus
// MeDrops equal the instructions the hardware tagged.
//
// The section after the stack section (in a version-4 batch, whose stack
// section may be empty):
//
//	meversion (uvarint, MeSectionVersion: the section is versioned on its own)
//	nentries, each (in (image, offset, pid) order):
//	    imagekey offset pid mask (uvarint: bit i set iff field i is nonzero) then the nonzero fields in order
//	unknown (uvarint: samples no image map covered)
//	ndrops, each (sorted by name): name count
//
// Field 0 (MeSamples) must be nonzero in every entry.

// MeVersion is the first batch version that carries ProfileMe samples.
const MeVersion = 4

// MeSectionVersion is the version of the ProfileMe section's own layout;
// a section of another version is refused with ErrVersion.
const MeSectionVersion = 1

// MaxMeEntries caps Batch.Me.
const MaxMeEntries = 1 << 18

// The fields of an MeEntry, in order. Sums are of cycles; the histogram
// buckets count samples by head-of-queue cycles: 0, 1, 2-3, 4-7, 8-15,
// 16-31, 32-63, 64 and more.
const (
	MeSamples      = iota          // samples of this instruction: retired + aborted
	MeRetired                      // retired
	MeAbortIntr                    // aborted by an interrupt before it issued
	MeAbortTrap                    // aborted by a trap it raised (a fault)
	MeTaken                        // event bits, counted per sample (alpha.MeEvents order, after retired)
	MeMispredict                   //
	MeIMiss                        //
	MeITBMiss                      //
	MeDMiss                        //
	MeDTBMiss                      //
	MeSMiss                        //
	MeBMiss                        //
	MeWBFull                       //
	MeHeadCycles                   // sum of cycles at the head of the issue queue
	MeStall0                       // sums of stall cycles by cause, alpha.StallCause order (12 causes)
	MeLoads        = MeStall0 + 12 // samples that were loads with data
	MeLoadLatency  = MeLoads + 1   // sum of their issue-to-data latencies
	MeHist0        = MeLoadLatency + 1
	MeHistBuckets  = 8
	MeFields       = MeHist0 + MeHistBuckets
	meStallCauses  = 12
	meFirstEvent   = MeTaken
	meEventsCopied = MeWBFull - MeTaken + 1
)

var meFieldNames = func() [MeFields]string {
	var n [MeFields]string
	copy(n[:], []string{"samples", "retired", "abort_interrupt", "abort_trap", "taken", "mispredict", "imiss",
		"itbmiss", "dmiss", "dtbmiss", "smiss", "bmiss", "wbfull", "head_cycles"})
	for i, c := range []string{"slot", "ra", "rb", "imul", "fdiv", "icache", "itb", "dcache", "dtb", "mispredict", "wbuf", "barrier"} {
		n[MeStall0+i] = "stall_" + c
	}
	n[MeLoads], n[MeLoadLatency] = "loads", "load_latency"
	for i := range MeHistBuckets {
		n[MeHist0+i] = fmt.Sprintf("head_hist%d", i)
	}
	return n
}()

// MeFieldName names field i.
func MeFieldName(i int) string {
	if i < 0 || i >= MeFields {
		return fmt.Sprintf("mefield(%d)", i)
	}
	return meFieldNames[i]
}

// MeHistBucket is the histogram bucket of head cycles.
func MeHistBucket(head uint64) int {
	if head == 0 {
		return 0
	}
	return min(bits.Len64(head), MeHistBuckets-1)
}

// ProfileMe drop reasons (Batch.MeDrops); stored data, never renamed.
const (
	// DropMeOverflowFull counts ProfileMe samples the driver dropped
	// because both ProfileMe overflow buffers of their CPU were full.
	DropMeOverflowFull = "profileme.overflow_full"
	// DropMeHardwareFull counts records the hardware lost because every
	// profile register copy was full when they completed.
	DropMeHardwareFull = "profileme.hardware_full"
)

// MeCounts are an instruction's ProfileMe sums, indexed by the Me fields.
type MeCounts [MeFields]uint64

// Add adds o to c, saturating.
func (c *MeCounts) Add(o *MeCounts) {
	for i := range c {
		c[i] = satAdd(c[i], o[i])
	}
}

// MeEntry is the ProfileMe sums of one (image, offset, PID).
type MeEntry struct {
	Image  ImageKey
	Offset uint64
	PID    uint32
	Counts MeCounts
}

func compareMe(a, b MeEntry) int {
	if c := a.Image.Compare(b.Image); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
		return c
	}
	return cmp.Compare(a.PID, b.PID)
}

// MeTotal is the samples the batch's ProfileMe entries and unknown count.
func (b *Batch) MeTotal() uint64 {
	t := b.MeUnknown
	for i := range b.Me {
		t += b.Me[i].Counts[MeSamples]
	}
	return t
}

// normalizeMe sorts entries, sums duplicates, drops empty ones.
func (b *Batch) normalizeMe() {
	slices.SortFunc(b.Me, compareMe)
	out := b.Me[:0]
	for i := range b.Me {
		if n := len(out); n > 0 && compareMe(out[n-1], b.Me[i]) == 0 {
			out[n-1].Counts.Add(&b.Me[i].Counts)
			continue
		}
		out = append(out, b.Me[i])
	}
	nz := out[:0]
	for i := range out {
		if out[i].Counts[MeSamples] != 0 {
			nz = append(nz, out[i])
		}
	}
	b.Me = nz
	for name, n := range b.MeDrops {
		if n == 0 {
			delete(b.MeDrops, name)
		}
	}
}

// validateMe checks the ProfileMe rules of Validate.
func (b *Batch) validateMe() error {
	if b.Version < MeVersion && (len(b.Me) != 0 || b.MeUnknown != 0 || len(b.MeDrops) != 0) {
		return fmt.Errorf("wire: batch: %w: version %d carries no ProfileMe samples", ErrInvalid, b.Version)
	}
	if len(b.Me) > MaxMeEntries {
		return fmt.Errorf("wire: batch: %w: %d ProfileMe entries (cap %d)", ErrTooLarge, len(b.Me), MaxMeEntries)
	}
	if len(b.MeDrops) > MaxDrops {
		return fmt.Errorf("wire: batch: %w: %d ProfileMe drop counters (cap %d)", ErrTooLarge, len(b.MeDrops), MaxDrops)
	}
	total := b.MeUnknown
	for i := range b.Me {
		e := &b.Me[i]
		if err := e.Image.Check(); err != nil {
			return fmt.Errorf("wire: batch: %w: ProfileMe entry %d: %v", ErrInvalid, i, err)
		}
		if e.Counts[MeSamples] == 0 {
			return fmt.Errorf("wire: batch: %w: ProfileMe entry %d: no samples", ErrInvalid, i)
		}
		if parts := e.Counts[MeRetired] + e.Counts[MeAbortIntr] + e.Counts[MeAbortTrap]; parts != e.Counts[MeSamples] {
			return fmt.Errorf("wire: batch: %w: ProfileMe entry %d: %d samples but %d retired or aborted", ErrInvalid, i, e.Counts[MeSamples], parts)
		}
		if i > 0 && compareMe(b.Me[i-1], *e) >= 0 {
			return fmt.Errorf("wire: batch: %w: ProfileMe entry %d: not after entry %d in (image, offset, pid) order", ErrInvalid, i, i-1)
		}
		var c uint64
		if total, c = bits.Add64(total, e.Counts[MeSamples], 0); c != 0 {
			return fmt.Errorf("wire: batch: %w: ProfileMe entry %d: total samples overflow 64 bits", ErrInvalid, i)
		}
	}
	for name := range b.MeDrops {
		if err := CheckDropName(name); err != nil {
			return fmt.Errorf("wire: batch: ProfileMe drops: %w", err)
		}
	}
	return nil
}

// appendMe writes the ProfileMe section.
func (b *Batch) appendMe(buf []byte) []byte {
	buf = binary.AppendUvarint(buf, MeSectionVersion)
	buf = binary.AppendUvarint(buf, uint64(len(b.Me)))
	for i := range b.Me {
		e := &b.Me[i]
		buf = e.Image.appendTo(buf)
		buf = binary.AppendUvarint(buf, e.Offset)
		buf = binary.AppendUvarint(buf, uint64(e.PID))
		var mask uint64
		for f, v := range e.Counts {
			if v != 0 {
				mask |= 1 << f
			}
		}
		buf = binary.AppendUvarint(buf, mask)
		for _, v := range e.Counts {
			if v != 0 {
				buf = binary.AppendUvarint(buf, v)
			}
		}
	}
	buf = binary.AppendUvarint(buf, b.MeUnknown)
	return appendDrops(buf, b.MeDrops)
}

// minMeEntryBytes is the least an entry can take: a key, offset, pid,
// mask and the samples field.
const minMeEntryBytes = 2 + 4

// decodeMe reads the ProfileMe section into nb.
func decodeMe(d *bincodec.Decoder, nb *Batch) {
	if v := d.Uvarint("ProfileMe section version"); d.Err() == nil && v != MeSectionVersion {
		d.Fail(ErrVersion, "ProfileMe section version %d (this build reads %d)", v, MeSectionVersion)
		return
	}
	n := d.Count("ProfileMe entries", MaxMeEntries, minMeEntryBytes)
	if n > 0 {
		nb.Me = make([]MeEntry, 0, n)
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		var e MeEntry
		e.Image = decodeImageKey(d, "ProfileMe image")
		e.Offset = d.Uvarint("ProfileMe offset")
		e.PID = uint32(d.UvarintMax("ProfileMe pid", 1<<32-1))
		mask := d.UvarintMax("ProfileMe field mask", 1<<MeFields-1)
		for f := range MeFields {
			if mask&(1<<f) == 0 || d.Err() != nil {
				continue
			}
			if e.Counts[f] = d.Uvarint("ProfileMe " + meFieldNames[f]); e.Counts[f] == 0 && d.Err() == nil {
				d.Fail(ErrInvalid, "ProfileMe entry %d: field %s in the mask is zero", i, meFieldNames[f])
			}
		}
		nb.Me = append(nb.Me, e)
	}
	nb.MeUnknown = d.Uvarint("ProfileMe unknown")
	nb.MeDrops = decodeDrops(d, "ProfileMe drop")
}
