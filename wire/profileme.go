package wire

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"dcpi/internal/bincodec"
	"dcpi/internal/hotlist"
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
//	(section version 2 on:)
//	nhist, each (in (image, offset, history) order): imagekey offset history count
//	histdropped (uvarint: attributed samples whose history was not kept)
//	naddrs, each (in (image, offset) order): imagekey offset hotlist (internal/hotlist's encoding)
//
// Field 0 (MeSamples) must be nonzero in every entry. A version 1 section
// (the fields up to MeHist0+7, no history or addresses) still decodes:
// its entries read as version 2 entries whose later fields are zero.
//
// Version 2 fields (ProfileMe sec. 4.2, 5.2, 5.3; the 21264's Table 1):
// aborts of squashed instructions (fetched on a mispredicted path, or
// younger than a trap), the stage latency sums, and the pair statistics
// of paired sampling. A sample's partner is the other instruction of its
// pair; "in progress" is from fetch to ready-to-retire (on the 21164, which
// has no retire-ready stage, to its finish). Overlap: the partner's
// [fetched, finished] interval meets this one's. Useful overlap (sec.
// 5.2.3): the partner issued while this instruction was in progress, and
// then retired. MeInProgress sums the in-progress cycles of the paired
// samples (the paper's L_I), MeUseful counts the useful overlaps (U_I =
// U_I^F + U_I^B, over both roles).

// MeVersion is the first batch version that carries ProfileMe samples.
const MeVersion = 4

// MeSectionVersion is the version of the ProfileMe section's own layout
// this build writes; it reads it and version 1, and refuses any other
// with ErrVersion.
const MeSectionVersion = 2

// meFieldsV1 is the number of fields a version 1 section's entries have.
const meFieldsV1 = MeHist0 + MeHistBuckets

// MaxMeHist caps Batch.MeHist, MaxMeAddrs Batch.MeAddrs.
const (
	MaxMeHist  = 1 << 18
	MaxMeAddrs = 1 << 16
)

// MaxMeEntries caps Batch.Me.
const MaxMeEntries = 1 << 18

// The fields of an MeEntry, in order. Sums are of cycles; the histogram
// buckets count samples by head-of-queue cycles: 0, 1, 2-3, 4-7, 8-15,
// 16-31, 32-63, 64 and more.
const (
	MeSamples     = iota          // samples of this instruction: retired + aborted
	MeRetired                     // retired
	MeAbortIntr                   // aborted by an interrupt before it issued
	MeAbortTrap                   // aborted by a trap it raised (a fault)
	MeTaken                       // event bits, counted per sample (alpha.MeEvents order, after retired)
	MeMispredict                  //
	MeIMiss                       //
	MeITBMiss                     //
	MeDMiss                       //
	MeDTBMiss                     //
	MeSMiss                       //
	MeBMiss                       //
	MeWBFull                      //
	MeHeadCycles                  // sum of cycles at the head of the issue queue
	MeStall0                      // sums of stall cycles by cause, alpha.StallCause order (12 causes)
	MeLoads       = MeStall0 + 12 // samples that were loads with data
	MeLoadLatency = MeLoads + 1   // sum of their issue-to-data latencies
	MeHist0       = MeLoadLatency + 1
	MeHistBuckets = 8
	// Version 2.
	MeAbortSquash    = MeHist0 + MeHistBuckets // aborted: squashed (wrong path, or younger than a trap)
	MeStage0         = MeAbortSquash + 1       // sums of the Table 1 stage latencies, alpha.MeFetchToMap order (5 stages)
	MeStages         = 5                       //
	MeFirst          = MeStage0 + MeStages     // samples that were the first of a pair
	MeSecond         = MeFirst + 1             // samples that were the second of a pair
	MePartnerRetired = MeSecond + 1            // paired samples whose partner retired
	MeOverlap        = MePartnerRetired + 1    // paired samples whose partner was in flight at the same time
	MeOverlapCycles  = MeOverlap + 1           // sum of the cycles both were in flight
	MeUseful         = MeOverlapCycles + 1     // paired samples with useful overlap (U)
	MeInProgress     = MeUseful + 1            // sum over paired samples of fetch to ready-to-retire cycles (L)
	MeFields         = MeInProgress + 1
	meStallCauses    = 12
	meFirstEvent     = MeTaken
	meEventsCopied   = MeWBFull - MeTaken + 1
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
	n[MeAbortSquash] = "abort_squash"
	for i, st := range []string{"fetch_map", "map_ready", "ready_issue", "issue_retready", "retready_retire"} {
		n[MeStage0+i] = "stage_" + st
	}
	n[MeFirst], n[MeSecond], n[MePartnerRetired], n[MeOverlap] = "pair_first", "pair_second", "pair_partner_retired", "pair_overlap"
	n[MeOverlapCycles], n[MeUseful], n[MeInProgress] = "pair_overlap_cycles", "pair_useful", "pair_in_progress"
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
	// DropMePairUnmatched counts records of paired sampling the driver
	// refused because their partner was missing from the interrupt (a
	// first not followed by its second, or a second without its first):
	// a half pair's overlap cannot be computed, and is never merged.
	DropMePairUnmatched = "profileme.pair_unmatched"
)

// MeHistEntry counts the samples of one instruction taken with one
// path-history register value (ProfileMe sec. 5.3): the directions of
// the conditional branches fetched before it, newest in bit 0.
type MeHistEntry struct {
	Image   ImageKey
	Offset  uint64
	History uint16
	Count   uint64
}

func compareMeHist(a, b MeHistEntry) int {
	if c := a.Image.Compare(b.Image); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
		return c
	}
	return cmp.Compare(a.History, b.History)
}

// MeAddrList is one instruction's hot list of effective addresses (a
// load's or store's) or targets (an indirect jump's), a Gibbons-Matias
// sample (internal/hotlist): List.N counts the samples that had an
// address, τ·count estimates how many of them had each listed one.
type MeAddrList struct {
	Image  ImageKey
	Offset uint64
	List   hotlist.List
}

func compareMeAddr(a, b *MeAddrList) int {
	if c := a.Image.Compare(b.Image); c != 0 {
		return c
	}
	return cmp.Compare(a.Offset, b.Offset)
}

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
	slices.SortFunc(b.MeHist, compareMeHist)
	b.MeHist = mergeSorted(b.MeHist, func(x, y MeHistEntry) bool { return compareMeHist(x, y) == 0 },
		func(e *MeHistEntry) *uint64 { return &e.Count })
	slices.SortFunc(b.MeAddrs, func(x, y MeAddrList) int { return compareMeAddr(&x, &y) })
	out2 := b.MeAddrs[:0]
	for i := range b.MeAddrs {
		if n := len(out2); n > 0 && compareMeAddr(&out2[n-1], &b.MeAddrs[i]) == 0 {
			x, y := &out2[n-1].List, &b.MeAddrs[i].List
			out2[n-1].List = hotlist.Merge(x, y, hotlist.NewCoin(hotlist.Seed(x, y)))
			continue
		}
		out2 = append(out2, b.MeAddrs[i])
	}
	b.MeAddrs = out2
}

// validateMe checks the ProfileMe rules of Validate.
func (b *Batch) validateMe() error {
	if b.Version < MeVersion && (len(b.Me) != 0 || b.MeUnknown != 0 || len(b.MeDrops) != 0 ||
		len(b.MeHist) != 0 || b.MeHistDropped != 0 || len(b.MeAddrs) != 0) {
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
		if err := e.Counts.Check(); err != nil {
			return fmt.Errorf("wire: batch: %w: ProfileMe entry %d: %v", ErrInvalid, i, err)
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
	return b.validateMeV2()
}

// Check reports the first rule an entry's counts break: every sample
// retired or aborted for one reason; pair roles within the samples, and
// each pair statistic within the paired samples (a useful overlap is an
// overlap whose partner retired).
func (c *MeCounts) Check() error {
	n := c[MeSamples]
	parts := c[MeRetired] + c[MeAbortIntr] + c[MeAbortTrap] + c[MeAbortSquash]
	if parts != n || parts < c[MeRetired] {
		return fmt.Errorf("%d samples but %d retired or aborted", n, parts)
	}
	paired := c[MeFirst] + c[MeSecond]
	switch {
	case paired > n || paired < c[MeFirst]:
		return fmt.Errorf("%d samples but %d first and %d second of pairs", n, c[MeFirst], c[MeSecond])
	case c[MePartnerRetired] > paired, c[MeOverlap] > paired:
		return fmt.Errorf("%d paired samples but %d partners retired, %d overlapped", paired, c[MePartnerRetired], c[MeOverlap])
	case c[MeUseful] > c[MeOverlap] || c[MeUseful] > c[MePartnerRetired]:
		return fmt.Errorf("%d useful overlaps beyond %d overlaps or %d partners retired", c[MeUseful], c[MeOverlap], c[MePartnerRetired])
	case c[MeOverlap] == 0 && c[MeOverlapCycles] != 0:
		return fmt.Errorf("%d overlap cycles without an overlap", c[MeOverlapCycles])
	case paired == 0 && c[MeInProgress] != 0:
		return fmt.Errorf("%d in-progress cycles without a paired sample", c[MeInProgress])
	}
	return nil
}

// validateMeV2 checks the history and address tables.
func (b *Batch) validateMeV2() error {
	if len(b.MeHist) > MaxMeHist {
		return fmt.Errorf("wire: batch: %w: %d ProfileMe history entries (cap %d)", ErrTooLarge, len(b.MeHist), MaxMeHist)
	}
	if len(b.MeAddrs) > MaxMeAddrs {
		return fmt.Errorf("wire: batch: %w: %d ProfileMe address lists (cap %d)", ErrTooLarge, len(b.MeAddrs), MaxMeAddrs)
	}
	for i := range b.MeHist {
		h := &b.MeHist[i]
		if err := h.Image.Check(); err != nil {
			return fmt.Errorf("wire: batch: %w: ProfileMe history entry %d: %v", ErrInvalid, i, err)
		}
		if h.Count == 0 {
			return fmt.Errorf("wire: batch: %w: ProfileMe history entry %d: count 0", ErrInvalid, i)
		}
		if i > 0 && compareMeHist(b.MeHist[i-1], *h) >= 0 {
			return fmt.Errorf("wire: batch: %w: ProfileMe history entry %d: not after entry %d in (image, offset, history) order", ErrInvalid, i, i-1)
		}
	}
	for i := range b.MeAddrs {
		a := &b.MeAddrs[i]
		if err := a.Image.Check(); err != nil {
			return fmt.Errorf("wire: batch: %w: ProfileMe address list %d: %v", ErrInvalid, i, err)
		}
		if err := a.List.Check(); err != nil {
			return fmt.Errorf("wire: batch: %w: ProfileMe address list %d: %v", ErrInvalid, i, err)
		}
		if a.List.N == 0 {
			return fmt.Errorf("wire: batch: %w: ProfileMe address list %d: no samples", ErrInvalid, i)
		}
		if i > 0 && compareMeAddr(&b.MeAddrs[i-1], a) >= 0 {
			return fmt.Errorf("wire: batch: %w: ProfileMe address list %d: not after list %d in (image, offset) order", ErrInvalid, i, i-1)
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
	buf = appendDrops(buf, b.MeDrops)
	buf = binary.AppendUvarint(buf, uint64(len(b.MeHist)))
	for i := range b.MeHist {
		h := &b.MeHist[i]
		buf = h.Image.appendTo(buf)
		buf = binary.AppendUvarint(buf, h.Offset)
		buf = binary.AppendUvarint(buf, uint64(h.History))
		buf = binary.AppendUvarint(buf, h.Count)
	}
	buf = binary.AppendUvarint(buf, b.MeHistDropped)
	buf = binary.AppendUvarint(buf, uint64(len(b.MeAddrs)))
	for i := range b.MeAddrs {
		a := &b.MeAddrs[i]
		buf = a.Image.appendTo(buf)
		buf = binary.AppendUvarint(buf, a.Offset)
		buf = a.List.AppendBinary(buf)
	}
	return buf
}

// minMeEntryBytes is the least an entry can take: a key, offset, pid,
// mask and the samples field.
const minMeEntryBytes = 2 + 4

// decodeMe reads the ProfileMe section into nb.
func decodeMe(d *bincodec.Decoder, nb *Batch) {
	v := d.Uvarint("ProfileMe section version")
	if d.Err() == nil && v != 1 && v != MeSectionVersion {
		d.Fail(ErrVersion, "ProfileMe section version %d (this build reads 1 to %d)", v, MeSectionVersion)
		return
	}
	fields := MeFields
	if v == 1 {
		fields = meFieldsV1
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
		mask := d.UvarintMax("ProfileMe field mask", 1<<fields-1)
		for f := range fields {
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
	if v < 2 || d.Err() != nil {
		return
	}
	if n := d.Count("ProfileMe history entries", MaxMeHist, minMeHistBytes); n > 0 {
		nb.MeHist = make([]MeHistEntry, 0, n)
		for i := 0; i < n && d.Err() == nil; i++ {
			var h MeHistEntry
			h.Image = decodeImageKey(d, "ProfileMe history image")
			h.Offset = d.Uvarint("ProfileMe history offset")
			h.History = uint16(d.UvarintMax("ProfileMe history", 1<<16-1))
			h.Count = d.Uvarint("ProfileMe history count")
			nb.MeHist = append(nb.MeHist, h)
		}
	}
	nb.MeHistDropped = d.Uvarint("ProfileMe history dropped")
	if n := d.Count("ProfileMe address lists", MaxMeAddrs, minMeAddrBytes); n > 0 && d.Err() == nil {
		nb.MeAddrs = make([]MeAddrList, 0, n)
		for i := 0; i < n && d.Err() == nil; i++ {
			var a MeAddrList
			a.Image = decodeImageKey(d, "ProfileMe address image")
			a.Offset = d.Uvarint("ProfileMe address offset")
			a.List = hotlist.Decode(d)
			nb.MeAddrs = append(nb.MeAddrs, a)
		}
	}
}

// minMeHistBytes and minMeAddrBytes are the least a history entry and an
// address list can take.
const (
	minMeHistBytes = 2 + 3
	minMeAddrBytes = 2 + 1 + 3
)
