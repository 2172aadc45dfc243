package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"dcpi/internal/bincodec"
	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// Value-sampling tables (doc.go): hot lists per epoch, host-major and
// fleet-wide, each merged on apply by Gibbons-Matias's rule
// (internal/hotlist: the smaller τ thinned first), never by adding counts;
// and the interpreter's accounting per (epoch, host), with the last record
// applied, so a redelivery changes nothing.
const (
	tValueHost  = 'v' // epoch:8 host\0 image:34 offset:8 kind:1 → hot list
	tValueFleet = 'l' // epoch:8 image:34 offset:8 kind:1 → hot list
	tValueStats = 'z' // epoch:8 host\0 → version, module, last Seq applied, ValueStats
)

func valueHostKey(epoch uint64, host string, l *wire.ValueList) []byte {
	b := appendHost(appendU64([]byte{tValueHost}, epoch), host)
	return append(appendU64(append(b, l.Image[:]...), l.Offset), l.Kind)
}

func valueFleetKey(epoch uint64, l *wire.ValueList) []byte {
	b := appendU64([]byte{tValueFleet}, epoch)
	return append(appendU64(append(b, l.Image[:]...), l.Offset), l.Kind)
}

func valueStatsKey(epoch uint64, host string) []byte {
	return appendHost(appendU64([]byte{tValueStats}, epoch), host)
}

// tValueSeq is the newest value record applied per host: a host's
// records are numbered from 1 across its epochs and across restarts of its
// daemon (a restarted cluster node resumes after what the stream and the
// database hold, like its batches), so one number per host orders them.
const tValueSeq = 'y' // host\0 → last value record Seq applied

func valueSeqKey(host string) []byte { return appendHost([]byte{tValueSeq}, host) }

// ApplyValues merges a host's value record into its epoch's hot lists,
// per host and fleet-wide, and adds its accounting, in one Pebble batch. A
// record whose Seq is not past the host's last applied one is a
// redelivery: it changes nothing and applied is false. A record past the
// next one is applied too (a local sink sees every record in order; the
// cluster's state machine uses ApplyValuesWith, which refuses gaps).
// Merges toss coins seeded from what they merge, so every replica applying
// the same log stores the same lists.
func (db *DB) ApplyValues(r *wire.ValuesRecord) (applied bool, err error) {
	o, err := db.applyValues(0, r, nil)
	return o == Applied, err
}

// ApplyValuesWith applies r as the merge of a host's records first..r.Seq
// (aggregator.MergeValues), and m's writes (if m is not nil), in one
// Pebble batch, deciding as ApplyDeltasWith decides for a delta against
// the host's last applied Seq: Applied (first is the next one), Duplicate
// (r.Seq is applied already: nothing changes but m), Gap (a record before
// first is missing) or Overlap (part of the run is applied; the proposer
// applies its records one by one).
func (db *DB) ApplyValuesWith(first uint64, r *wire.ValuesRecord, m *Meta) (Outcome, error) {
	if first == 0 || first > r.Seq {
		return 0, fmt.Errorf("%w: values run %d..%d of %s", ErrInvalid, first, r.Seq, r.Host)
	}
	return db.applyValues(first, r, m)
}

// applyValues is ApplyValues (first 0: whatever follows the applied Seq)
// and ApplyValuesWith.
func (db *DB) applyValues(first uint64, r *wire.ValuesRecord, m *Meta) (Outcome, error) {
	if err := r.Validate(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := db.use(true); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	applied, err := db.valueSeq(r.Host)
	if err != nil {
		return 0, fmt.Errorf("storage: apply values: %w", err)
	}
	if first == 0 {
		first = applied + 1
	}
	outcome := Applied
	switch {
	case r.Seq <= applied:
		outcome = Duplicate
	case first > applied+1:
		outcome = Gap
	case first <= applied:
		outcome = Overlap
	}
	pb := db.pdb.NewBatch()
	defer pb.Close()
	if outcome == Applied {
		if err := db.valueWrites(pb, r); err != nil {
			return 0, fmt.Errorf("storage: apply values: %w", err)
		}
	}
	if m != nil {
		for _, op := range m.ops {
			if err := pb.Set(op.key, op.val, nil); err != nil {
				return 0, fmt.Errorf("storage: apply values: %w", err)
			}
		}
	}
	if pb.Empty() {
		return outcome, nil
	}
	if err := db.commit(pb); err != nil {
		return 0, fmt.Errorf("storage: apply values: %w", err)
	}
	return outcome, nil
}

// valueWrites adds r's lists, accounting and Seq to pb.
func (db *DB) valueWrites(pb *pebble.Batch, r *wire.ValuesRecord) error {
	skey := valueStatsKey(r.Epoch, r.Host)
	module, _, stats, err := db.storedValueStats(skey)
	if err != nil {
		return err
	}
	for i := range r.Lists {
		l := &r.Lists[i]
		for _, key := range [][]byte{valueHostKey(r.Epoch, r.Host, l), valueFleetKey(r.Epoch, l)} {
			merged := l.List
			stored, ok, err := db.storedList(key)
			if err != nil {
				return err
			}
			if ok {
				merged = hotlist.Merge(&stored, &l.List, hotlist.NewCoin(hotlist.Seed(&stored, &l.List)))
			}
			if err := pb.Set(key, merged.AppendBinary(nil), nil); err != nil {
				return err
			}
		}
	}
	if module != "" && module != r.Module {
		module += "," + r.Module
	} else {
		module = r.Module
	}
	stats.Add(r.Stats)
	if err := pb.Set(skey, encodeValueStats(module, r.Seq, stats), nil); err != nil {
		return err
	}
	return pb.Set(valueSeqKey(r.Host), bincodec.AppendUvarint(nil, r.Seq), nil)
}

// valueSeq is host's last applied value record Seq (0: none). The caller
// holds db.mu.
func (db *DB) valueSeq(host string) (uint64, error) {
	v, ok, err := db.get(valueSeqKey(host))
	if err != nil || !ok {
		return 0, err
	}
	return decodeValueSeq(host, v)
}

// decodeValueSeq reads a host's last applied value record Seq.
func decodeValueSeq(host string, v []byte) (uint64, error) {
	d := bincodec.NewDecoder(v, 0)
	seq := d.Uvarint("value seq")
	d.End()
	if err := d.Err(); err != nil {
		return 0, fmt.Errorf("%w: value seq of %s: %w", ErrCorrupt, host, err)
	}
	return seq, nil
}

// ValuesApplied returns host's last applied value record Seq (0: none): a
// restarted node numbers its records after it (and after the newest its
// stream still holds).
func (db *DB) ValuesApplied(host string) (uint64, error) {
	if err := db.use(false); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	return db.valueSeq(host)
}

func (db *DB) storedList(key []byte) (hotlist.List, bool, error) {
	v, ok, err := db.get(key)
	if err != nil || !ok {
		return hotlist.List{}, false, err
	}
	d := bincodec.NewDecoder(v, 0)
	l := hotlist.Decode(d)
	d.End()
	if err := d.Err(); err != nil {
		return hotlist.List{}, false, fmt.Errorf("%w: hot list at %x: %w", ErrCorrupt, key, err)
	}
	return l, true, nil
}

func encodeValueStats(module string, seq uint64, s wire.ValueStats) []byte {
	b := []byte{1} // version
	b = bincodec.AppendString(b, module)
	b = bincodec.AppendUvarint(b, seq)
	for _, v := range []uint64{s.Interrupts, s.NoContext, s.Completed, s.Steps, s.Values, s.TableFull, s.Unattributed} {
		b = bincodec.AppendUvarint(b, v)
	}
	keys := slices.Sorted(maps.Keys(s.GaveUp))
	b = bincodec.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = bincodec.AppendString(b, k)
		b = bincodec.AppendUvarint(b, s.GaveUp[k])
	}
	return b
}

func decodeValueStats(v []byte) (string, uint64, wire.ValueStats, error) {
	var s wire.ValueStats
	d := bincodec.NewDecoder(v, 0)
	if ver := d.Byte("version"); d.Err() == nil && ver != 1 {
		return "", 0, s, fmt.Errorf("%w: value stats version %d", ErrCorrupt, ver)
	}
	module := d.String("module", 1024)
	seq := d.Uvarint("seq")
	for _, p := range []*uint64{&s.Interrupts, &s.NoContext, &s.Completed, &s.Steps, &s.Values, &s.TableFull, &s.Unattributed} {
		*p = d.Uvarint("stats")
	}
	if n := d.Count("reasons", 64, 2); n > 0 {
		s.GaveUp = map[string]uint64{}
		for range n {
			k := d.String("reason", 64)
			s.GaveUp[k] += d.Uvarint("count")
		}
	}
	d.End()
	if err := d.Err(); err != nil {
		return "", 0, wire.ValueStats{}, fmt.Errorf("%w: value stats: %w", ErrCorrupt, err)
	}
	return module, seq, s, nil
}

func (db *DB) storedValueStats(key []byte) (string, uint64, wire.ValueStats, error) {
	v, ok, err := db.get(key)
	if err != nil || !ok {
		return "", 0, wire.ValueStats{}, err
	}
	return decodeValueStats(v)
}

// ValueQuery selects hot lists: Epochs (none: every epoch holding value
// samples) and Hosts (none: the fleet, read from the fleet-wide table).
type ValueQuery struct {
	Epochs []uint64
	Hosts  []string
}

// ValueLists returns the hot lists q selects, one per (image, offset,
// kind), sorted: lists of several epochs or hosts are merged as the
// database merges them (coins seeded from the lists).
func (db *DB) ValueLists(ctx context.Context, q ValueQuery) ([]wire.ValueList, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := db.use(false); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	type key struct {
		image  wire.ImageKey
		offset uint64
		kind   uint8
	}
	merged := map[key]hotlist.List{}
	epochs, err := db.valueEpochs(q.Epochs)
	if err != nil {
		return nil, err
	}
	var prefixes [][]byte
	for _, e := range epochs {
		if len(q.Hosts) == 0 {
			prefixes = append(prefixes, appendU64([]byte{tValueFleet}, e))
		}
		for _, h := range q.Hosts {
			prefixes = append(prefixes, appendHost(appendU64([]byte{tValueHost}, e), h))
		}
	}
	for _, p := range prefixes {
		it, err := db.newIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
		if err != nil {
			return nil, err
		}
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()[len(p):]
			if len(k) != keyLen+9 {
				it.Close()
				return nil, fmt.Errorf("%w: value key %x", ErrCorrupt, it.Key())
			}
			var mk key
			copy(mk.image[:], k[:keyLen])
			mk.offset = binary.BigEndian.Uint64(k[keyLen:])
			mk.kind = k[keyLen+8]
			d := bincodec.NewDecoder(bytes.Clone(it.Value()), 0)
			l := hotlist.Decode(d)
			d.End()
			if err := d.Err(); err != nil {
				it.Close()
				return nil, fmt.Errorf("%w: hot list at %x: %w", ErrCorrupt, it.Key(), err)
			}
			if have, ok := merged[mk]; ok {
				l = hotlist.Merge(&have, &l, hotlist.NewCoin(hotlist.Seed(&have, &l)))
			}
			merged[mk] = l
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	out := make([]wire.ValueList, 0, len(merged))
	for k, l := range merged {
		out = append(out, wire.ValueList{Image: k.image, Offset: k.offset, Kind: k.kind, List: l})
	}
	slices.SortFunc(out, wire.CompareValueLists)
	return out, nil
}

// ValueTotals returns the interpreter's accounting summed over q's epochs
// and hosts (none: every host), and the modules that captured the values.
func (db *DB) ValueTotals(ctx context.Context, q ValueQuery) (modules []string, s wire.ValueStats, err error) {
	if err := ctx.Err(); err != nil {
		return nil, s, err
	}
	if err := db.use(false); err != nil {
		return nil, s, err
	}
	defer db.mu.RUnlock()
	want := map[string]bool{}
	for _, h := range q.Hosts {
		want[h] = true
	}
	seen := map[string]bool{}
	epochs, err := db.valueEpochs(q.Epochs)
	if err != nil {
		return nil, s, err
	}
	for _, e := range epochs {
		p := appendU64([]byte{tValueStats}, e)
		it, err := db.newIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
		if err != nil {
			return nil, s, err
		}
		for it.First(); it.Valid(); it.Next() {
			if len(want) > 0 && !want[string(bytes.TrimSuffix(it.Key()[len(p):], []byte{0}))] {
				continue
			}
			m, _, st, err := decodeValueStats(it.Value())
			if err != nil {
				it.Close()
				return nil, s, err
			}
			s.Add(st)
			if !seen[m] {
				seen[m] = true
				modules = append(modules, m)
			}
		}
		if err := it.Close(); err != nil {
			return nil, s, err
		}
	}
	slices.Sort(modules)
	return modules, s, nil
}

// valueEpochs is epochs, or when it is empty every epoch with value
// accounting ('z' keys). The caller holds db.mu.
func (db *DB) valueEpochs(epochs []uint64) ([]uint64, error) {
	if len(epochs) > 0 {
		return epochs, nil
	}
	it, err := db.newIter(&pebble.IterOptions{LowerBound: []byte{tValueStats}, UpperBound: []byte{tValueStats + 1}})
	if err != nil {
		return nil, err
	}
	var out []uint64
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) < 9 {
			it.Close()
			return nil, fmt.Errorf("%w: value stats key %x", ErrCorrupt, k)
		}
		if e := binary.BigEndian.Uint64(k[1:9]); len(out) == 0 || out[len(out)-1] != e {
			out = append(out, e)
		}
	}
	return out, it.Close()
}
