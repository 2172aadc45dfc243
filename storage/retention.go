package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"dcpi/internal/bincodec"
	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// Retention (doc.go, "Retention"): merging runs of sealed epochs into one
// coarser epoch, and deleting sealed epochs past a horizon with what they
// held counted as expired. Which epochs, and when, is the coordinator's
// policy; storage only refuses to touch an epoch that is not sealed.

// ErrUnsealed is wrapped when a merge or an expiry names an epoch that is
// not sealed: samples may still land in it, so it is never touched.
var ErrUnsealed = errors.New("storage: epoch not sealed")

// tExpired is what retention deleted, per host and view:
// 'r' host\0 view:1 → samples stored or dropped in the deleted epochs (merged).
const tExpired = 'r'

// Views of the expired counts: the flat profile, call stacks, ProfileMe.
const (
	viewFlat  = 'f'
	viewStack = 's'
	viewMe    = 'm'
)

func expiredKey(host string, view byte) []byte {
	return append(appendHost([]byte{tExpired}, host), view)
}

// Tables keyed by epoch, by how a merge combines their rows. Counters add
// (a merge operand per row); hot lists merge by Gibbons-Matias's rule;
// epochs, acks and value accounting are records merged field by field.
var (
	counterEpochTables = []byte{tCounts, tFleet, tHosts, tSummary, tUnknown, tDrops,
		tStackFleet, tStackHosts, tStackDrops, tStackSummary,
		tMe, tMeFleet, tMeSummary, tMeDrops, tMeHist, tMeHistFleet}
	hotlistEpochTables = []byte{tValueHost, tValueFleet, tMeAddrs, tMeAddrFleet}
	recordEpochTables  = []byte{tEpochs, tAcks, tValueStats}
)

// epochRange is table's keys of epochs lo..hi.
func epochRange(table byte, lo, hi uint64) (start, end []byte) {
	start = appendU64([]byte{table}, lo)
	if hi == ^uint64(0) {
		return start, []byte{table + 1}
	}
	return start, appendU64([]byte{table}, hi+1)
}

// withEpoch is key k with its epoch replaced by e.
func withEpoch(k []byte, e uint64) []byte {
	out := bytes.Clone(k)
	binary.BigEndian.PutUint64(out[offEpoch:], e)
	return out
}

// sealedEpochs returns the epoch records lo..hi, refusing any that is not
// sealed. The caller holds db.mu.
func (db *DB) sealedEpochs(lo, hi uint64) ([]Epoch, error) {
	var out []Epoch
	start, end := epochRange(tEpochs, lo, hi)
	err := db.scanRange(start, end, func(k, v []byte) error {
		if len(k) != 9 {
			return fmt.Errorf("%w: epoch key %x", ErrCorrupt, k)
		}
		e, err := decodeEpoch(binary.BigEndian.Uint64(k[1:]), v)
		if err != nil {
			return err
		}
		if e.State != EpochSealed {
			return fmt.Errorf("%w: epoch %d is %v", ErrUnsealed, e.Number, e.State)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// scanRange calls fn for each key in [start, end). The caller holds db.mu.
func (db *DB) scanRange(start, end []byte, fn func(k, v []byte) error) error {
	it, err := db.newIter(&pebble.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("storage: read %x: %w", it.Key(), err)
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("storage: scan: %w", err)
	}
	return nil
}

// MergeResult says what MergeEpochs did.
type MergeResult struct {
	Epoch Epoch // the merged epoch's record (Number is the first part's)
	Parts int   // epoch records merged into it, itself included
}

// MergeEpochs merges the epochs first..last, every one of which must be
// sealed (ErrUnsealed otherwise, changing nothing), into epoch first, with
// m's writes, in one Pebble batch: every counter of the later epochs is
// added to first's by a merge operand, so the merged epoch's totals are
// the parts' sums exactly; hot lists merge by Gibbons-Matias's rule in
// epoch order (coins seeded from the lists, as on apply, so every replica
// stores the same); value accounting adds; each host's ack keeps, per
// stream, the highest last Seq. The merged epoch spans the first part's
// Start to the last's End and records MergedThrough; the later parts'
// numbers are deleted with range deletions, so epoch numbers stay unique
// and increasing. first must have a record and be below last (ErrInvalid).
// CompactEpochs(first, last) then reclaims the parts' space.
func (db *DB) MergeEpochs(first, last uint64, m *Meta) (MergeResult, error) {
	if err := db.use(true); err != nil {
		return MergeResult{}, err
	}
	defer db.mu.RUnlock()
	if first == 0 || last <= first {
		return MergeResult{}, fmt.Errorf("%w: merge epochs %d..%d: want 0 < first < last", ErrInvalid, first, last)
	}
	eps, err := db.sealedEpochs(first, last)
	if err != nil {
		return MergeResult{}, fmt.Errorf("storage: merge epochs %d..%d: %w", first, last, err)
	}
	if len(eps) == 0 || eps[0].Number != first {
		return MergeResult{}, fmt.Errorf("%w: merge epochs %d..%d: no epoch %d", ErrInvalid, first, last, first)
	}
	merged := eps[0]
	for _, e := range eps[1:] {
		merged.End = e.End
		merged.MergedThrough = max(e.Number, e.MergedThrough)
	}
	if merged.MergedThrough == 0 {
		merged.MergedThrough = last
	}
	pb := db.pdb.NewBatch()
	defer pb.Close()
	if err := db.mergeWrites(pb, first, last, merged); err != nil {
		return MergeResult{}, fmt.Errorf("storage: merge epochs %d..%d: %w", first, last, err)
	}
	for _, op := range m.opsOrNil() {
		if err := pb.Set(op.key, op.val, nil); err != nil {
			return MergeResult{}, fmt.Errorf("storage: merge epochs: %w", err)
		}
	}
	if err := db.commit(pb); err != nil {
		return MergeResult{}, fmt.Errorf("storage: merge epochs %d..%d: %w", first, last, err)
	}
	return MergeResult{Epoch: merged, Parts: len(eps)}, nil
}

func (m *Meta) opsOrNil() []metaOp {
	if m == nil {
		return nil
	}
	return m.ops
}

// mergeWrites adds the merge of epochs first..last into first to pb. The
// caller holds db.mu.
func (db *DB) mergeWrites(pb *pebble.Batch, first, last uint64, merged Epoch) error {
	for _, t := range counterEpochTables {
		start, end := epochRange(t, first+1, last)
		err := db.scanRange(start, end, func(k, v []byte) error {
			if len(k) < offEvent || len(v) != 8 {
				return fmt.Errorf("%w: counter %x = %x", ErrCorrupt, k, v)
			}
			return pb.Merge(withEpoch(k, first), v, nil)
		})
		if err != nil {
			return err
		}
	}
	for _, t := range hotlistEpochTables {
		if err := db.mergeHotlists(pb, t, first, last); err != nil {
			return err
		}
	}
	if err := db.mergeValueStats(pb, first, last); err != nil {
		return err
	}
	if err := db.mergeAcks(pb, first, last); err != nil {
		return err
	}
	v, err := encodeEpoch(&merged)
	if err != nil {
		return err
	}
	if err := pb.Set(epochKey(first), v, nil); err != nil {
		return err
	}
	for _, t := range epochTables {
		start, end := epochRange(t, first+1, last)
		if err := pb.DeleteRange(start, end, nil); err != nil {
			return err
		}
	}
	return nil
}

// mergeHotlists merges table's lists of epochs first..last, key by key in
// epoch order, into first's.
func (db *DB) mergeHotlists(pb *pebble.Batch, table byte, first, last uint64) error {
	lists := map[string]hotlist.List{}
	var order []string
	start, end := epochRange(table, first, last)
	err := db.scanRange(start, end, func(k, v []byte) error {
		if len(k) < offEvent {
			return fmt.Errorf("%w: hot list key %x: short", ErrCorrupt, k)
		}
		d := bincodec.NewDecoder(v, 0)
		l := hotlist.Decode(d)
		d.End()
		if err := d.Err(); err != nil {
			return fmt.Errorf("%w: hot list at %x: %w", ErrCorrupt, k, err)
		}
		nk := string(withEpoch(k, first))
		if prev, ok := lists[nk]; ok {
			l = hotlist.Merge(&prev, &l, hotlist.NewCoin(hotlist.Seed(&prev, &l)))
		} else {
			order = append(order, nk)
		}
		lists[nk] = l
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(order)
	for _, k := range order {
		l := lists[k]
		if err := pb.Set([]byte(k), l.AppendBinary(nil), nil); err != nil {
			return err
		}
	}
	return nil
}

// mergeValueStats adds each host's value accounting of epochs first..last
// into first's: counts summed, modules joined once each, the newest Seq.
func (db *DB) mergeValueStats(pb *pebble.Batch, first, last uint64) error {
	type acct struct {
		modules []string
		seq     uint64
		stats   wire.ValueStats
	}
	byHost := map[string]*acct{}
	start, end := epochRange(tValueStats, first, last)
	err := db.scanRange(start, end, func(k, v []byte) error {
		if len(k) <= offEvent {
			return fmt.Errorf("%w: key %x: short", ErrCorrupt, k)
		}
		host, rest, ok := cutHost(k[offEvent:])
		if !ok || len(rest) != 0 {
			return fmt.Errorf("%w: value stats key %x", ErrCorrupt, k)
		}
		module, seq, s, err := decodeValueStats(v)
		if err != nil {
			return err
		}
		a := byHost[host]
		if a == nil {
			a = &acct{}
			byHost[host] = a
		}
		for _, mod := range strings.Split(module, ",") {
			if mod != "" && !slices.Contains(a.modules, mod) {
				a.modules = append(a.modules, mod)
			}
		}
		a.seq = max(a.seq, seq)
		a.stats.Add(s)
		return nil
	})
	if err != nil {
		return err
	}
	for _, host := range sortedMapKeys(byHost) {
		a := byHost[host]
		if err := pb.Set(valueStatsKey(first, host), encodeValueStats(strings.Join(a.modules, ","), a.seq, a.stats), nil); err != nil {
			return err
		}
	}
	return nil
}

// mergeAcks keeps each host's ack of epochs first..last under first: per
// stream the highest last Seq, the latest time, late if any part's was.
func (db *DB) mergeAcks(pb *pebble.Batch, first, last uint64) error {
	byHost := map[string]*EpochAck{}
	start, end := epochRange(tAcks, first, last)
	err := db.scanRange(start, end, func(k, v []byte) error {
		if len(k) <= offEvent {
			return fmt.Errorf("%w: key %x: short", ErrCorrupt, k)
		}
		host, rest, ok := cutHost(k[offEvent:])
		if !ok || len(rest) != 0 {
			return fmt.Errorf("%w: ack key %x", ErrCorrupt, k)
		}
		a, err := decodeAck(binary.BigEndian.Uint64(k[offEpoch:]), host, v)
		if err != nil {
			return err
		}
		m := byHost[host]
		if m == nil {
			m = &EpochAck{Epoch: first, Host: host}
			byHost[host] = m
		}
		for len(m.LastSeq) < len(a.LastSeq) {
			m.LastSeq = append(m.LastSeq, 0)
		}
		for i, s := range a.LastSeq {
			m.LastSeq[i] = max(m.LastSeq[i], s)
		}
		if a.At.After(m.At) {
			m.At = a.At
		}
		m.Late = m.Late || a.Late
		return nil
	})
	if err != nil {
		return err
	}
	for _, host := range sortedMapKeys(byHost) {
		v, err := encodeAck(byHost[host])
		if err != nil {
			return err
		}
		if err := pb.Set(ackKey(first, host), v, nil); err != nil {
			return err
		}
	}
	return nil
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Expired is what retention has deleted of a view, in samples: those
// stored (attributed or unknown) and those counted under a drop counter in
// the deleted epochs, so that generated = stored + dropped + expired stays
// exact after a deletion.
type Expired struct {
	Samples      uint64 // the flat profile's
	StackSamples uint64 // the call-stack view's
	MeSamples    uint64 // ProfileMe's
}

// ExpireResult says what ExpireEpochs did.
type ExpireResult struct {
	Epochs    int     // epoch records deleted
	Expired   Expired // what they held, over every host
	Processes int     // process records deleted (expiredProcesses)
}

// ExpireEpochs deletes every epoch through through, every one of which
// must be sealed (ErrUnsealed otherwise, changing nothing), with m's
// writes, in one Pebble batch: a range deletion per table keyed by epoch,
// and what the epochs held (per host and view, samples stored and
// dropped) added to the expired counts Expired reads, and the process
// records first seen in them whose processes have no sample left
// (expiredProcesses). CompactEpochs(0, through) then reclaims the space.
func (db *DB) ExpireEpochs(through uint64, m *Meta) (ExpireResult, error) {
	if err := db.use(true); err != nil {
		return ExpireResult{}, err
	}
	defer db.mu.RUnlock()
	eps, err := db.sealedEpochs(0, through)
	if err != nil {
		return ExpireResult{}, fmt.Errorf("storage: expire epochs through %d: %w", through, err)
	}
	type hostView struct {
		host string
		view byte
	}
	sums := map[hostView]uint64{}
	// The conservation counters of each view (Totals, StackTotals,
	// MeTotals): summary classes of samples stored, and drop counters.
	for _, src := range []struct {
		table   byte
		view    byte
		hostOff int
		counts  func(rest []byte) bool
	}{
		{tSummary, viewFlat, offEvent + 1, func(r []byte) bool { return len(r) == 1 && (r[0] == classKnow || r[0] == classUnkn) }},
		{tDrops, viewFlat, offEvent, func([]byte) bool { return true }},
		{tStackSummary, viewStack, offEvent + 1, func(r []byte) bool { return len(r) == 0 }},
		{tStackDrops, viewStack, offEvent, func([]byte) bool { return true }},
		{tMeSummary, viewMe, offEvent, func(r []byte) bool { return len(r) == 1 && (r[0] == classKnow || r[0] == classUnkn) }},
		{tMeDrops, viewMe, offEvent, func([]byte) bool { return true }},
	} {
		start, end := epochRange(src.table, 0, through)
		err := db.scanRange(start, end, func(k, v []byte) error {
			if len(k) <= src.hostOff {
				return fmt.Errorf("%w: key %x: short", ErrCorrupt, k)
			}
			host, rest, ok := cutHost(k[src.hostOff:])
			if !ok {
				return fmt.Errorf("%w: key %x: bad host", ErrCorrupt, k)
			}
			if !src.counts(rest) {
				return nil
			}
			n, err := decodeCount(k, v)
			if err != nil {
				return err
			}
			hv := hostView{host, src.view}
			sums[hv] = addSat(sums[hv], n)
			return nil
		})
		if err != nil {
			return ExpireResult{}, fmt.Errorf("storage: expire epochs through %d: %w", through, err)
		}
	}
	pb := db.pdb.NewBatch()
	defer pb.Close()
	res := ExpireResult{Epochs: len(eps)}
	var buf [8]byte
	for hv, n := range sums {
		if n == 0 {
			continue
		}
		if err := pb.Merge(expiredKey(hv.host, hv.view), encodeCount(&buf, n), nil); err != nil {
			return ExpireResult{}, fmt.Errorf("storage: expire epochs: %w", err)
		}
		switch hv.view {
		case viewFlat:
			res.Expired.Samples = addSat(res.Expired.Samples, n)
		case viewStack:
			res.Expired.StackSamples = addSat(res.Expired.StackSamples, n)
		case viewMe:
			res.Expired.MeSamples = addSat(res.Expired.MeSamples, n)
		}
	}
	for _, t := range epochTables {
		start, end := epochRange(t, 0, through)
		if err := pb.DeleteRange(start, end, nil); err != nil {
			return ExpireResult{}, fmt.Errorf("storage: expire epochs: %w", err)
		}
	}
	procs, err := db.expiredProcesses(through)
	if err != nil {
		return ExpireResult{}, fmt.Errorf("storage: expire epochs through %d: processes: %w", through, err)
	}
	for _, k := range procs {
		if err := pb.Delete(k, nil); err != nil {
			return ExpireResult{}, fmt.Errorf("storage: expire epochs: %w", err)
		}
	}
	res.Processes = len(procs)
	for _, op := range m.opsOrNil() {
		if err := pb.Set(op.key, op.val, nil); err != nil {
			return ExpireResult{}, fmt.Errorf("storage: expire epochs: %w", err)
		}
	}
	if err := db.commit(pb); err != nil {
		return ExpireResult{}, fmt.Errorf("storage: expire epochs through %d: %w", through, err)
	}
	return res, nil
}

// ExpiredTotals sums the expired counts of q's hosts (none: every host).
// Expired samples belong to no epoch that still exists, so a query naming
// epochs selects none; one naming events, images or PIDs selects all of
// a host's, which have none of those dimensions.
func (db *DB) ExpiredTotals(q Query) (Expired, error) {
	if err := db.use(false); err != nil {
		return Expired{}, err
	}
	defer db.mu.RUnlock()
	var out Expired
	if q.Epochs != nil {
		return out, nil
	}
	f := newFilter(&q)
	err := db.scanRange([]byte{tExpired}, []byte{tExpired + 1}, func(k, v []byte) error {
		host, rest, ok := cutHost(k[1:])
		if !ok || len(rest) != 1 {
			return fmt.Errorf("%w: expired key %x", ErrCorrupt, k)
		}
		if !f.host(host) {
			return nil
		}
		n, err := decodeCount(k, v)
		if err != nil {
			return err
		}
		switch rest[0] {
		case viewFlat:
			out.Samples = addSat(out.Samples, n)
		case viewStack:
			out.StackSamples = addSat(out.StackSamples, n)
		case viewMe:
			out.MeSamples = addSat(out.MeSamples, n)
		default:
			return fmt.Errorf("%w: expired key %x: view %q", ErrCorrupt, k, rest[0])
		}
		return nil
	})
	if err != nil {
		return Expired{}, fmt.Errorf("storage: expired totals: %w", err)
	}
	return out, nil
}
