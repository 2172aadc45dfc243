package storage

import (
	"cmp"
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

// ProfileMe section version 2's tables (doc.go): (PC, path-history)
// counts, summed like the ProfileMe fields, and effective-address hot
// lists, merged on apply by Gibbons-Matias's rule as value sampling's are.
const (
	tMeHist      = 'H' // epoch host\0 image offset history:2 → samples
	tMeHistFleet = 'J' // epoch image offset history:2 → samples over hosts
	tMeAddrs     = 'A' // epoch host\0 image offset → address hot list
	tMeAddrFleet = 'B' // epoch image offset → address hot list over hosts
	classHist    = 'h' // in 'S': attributed samples whose history was not kept
)

func meHistKey(epoch uint64, host string, h *wire.MeHistEntry) []byte {
	b := appendHost(appendU64(append(make([]byte, 0, 56+len(host)), tMeHist), epoch), host)
	b = appendU64(append(b, h.Image[:]...), h.Offset)
	return binary.BigEndian.AppendUint16(b, h.History)
}

func meHistFleetKey(epoch uint64, h *wire.MeHistEntry) []byte {
	b := appendU64(append(make([]byte, 0, 54), tMeHistFleet), epoch)
	b = appendU64(append(b, h.Image[:]...), h.Offset)
	return binary.BigEndian.AppendUint16(b, h.History)
}

func meAddrKey(epoch uint64, host string, a *wire.MeAddrList) []byte {
	b := appendHost(appendU64([]byte{tMeAddrs}, epoch), host)
	return appendU64(append(b, a.Image[:]...), a.Offset)
}

func meAddrFleetKey(epoch uint64, a *wire.MeAddrList) []byte {
	b := appendU64([]byte{tMeAddrFleet}, epoch)
	return appendU64(append(b, a.Image[:]...), a.Offset)
}

// addMeHist collects the merges of a batch's (PC, history) counts and
// history drop count.
func (w *batchWriter) addMeHist(b *wire.Batch) {
	for i := range b.MeHist {
		h := &b.MeHist[i]
		w.misc.add(meHistKey(b.Epoch, b.Host, h), h.Count)
		w.misc.add(meHistFleetKey(b.Epoch, h), h.Count)
	}
	if b.MeHistDropped != 0 {
		w.misc.add(meSummaryKey(b.Epoch, b.Host, classHist), b.MeHistDropped)
	}
}

// meAddrMerger merges the address lists of one apply call: each key's
// list is the stored one (or the one an earlier batch of the call left)
// merged with the batch's, written once at the end, in key order.
type meAddrMerger struct {
	db      *DB
	pending map[string]hotlist.List
}

func (m *meAddrMerger) add(b *wire.Batch) error {
	for i := range b.MeAddrs {
		a := &b.MeAddrs[i]
		for _, key := range [][]byte{meAddrKey(b.Epoch, b.Host, a), meAddrFleetKey(b.Epoch, a)} {
			stored, ok := m.pending[string(key)]
			if !ok {
				var err error
				if stored, ok, err = m.db.storedList(key); err != nil {
					return fmt.Errorf("storage: apply ProfileMe addresses: %w", err)
				}
			}
			merged := a.List.Clone()
			if ok {
				merged = hotlist.Merge(&stored, &a.List, hotlist.NewCoin(hotlist.Seed(&stored, &a.List)))
			}
			m.pending[string(key)] = merged
		}
	}
	return nil
}

func (m *meAddrMerger) writeTo(pb *pebble.Batch) error {
	for _, k := range slices.Sorted(maps.Keys(m.pending)) {
		l := m.pending[k]
		if err := pb.Set([]byte(k), l.AppendBinary(nil), nil); err != nil {
			return fmt.Errorf("storage: apply ProfileMe addresses: %w", err)
		}
	}
	return nil
}

// MeHistRow is one (instruction, path history)'s samples over the epochs
// and hosts a query selects.
type MeHistRow struct {
	Image   wire.ImageKey
	Offset  uint64
	History uint16
	Count   uint64
}

// MeHistory calls fn once per (image, offset, history) q selects, with its
// samples summed over q's epochs and hosts (q.PIDs and q.Events are
// ignored: the table has neither), in (image, offset, history) order.
func (db *DB) MeHistory(ctx context.Context, q Query, fn func(r *MeHistRow) error) error {
	fn = untilDone1(ctx, fn)
	if err := db.use(false); err != nil {
		return err
	}
	rows, err := db.meHistRows(q)
	db.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("storage: ProfileMe history: %w", err)
	}
	out := slices.Collect(maps.Values(rows))
	slices.SortFunc(out, func(a, b *MeHistRow) int {
		if c := a.Image.Compare(b.Image); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
			return c
		}
		return cmp.Compare(a.History, b.History)
	})
	for _, r := range out {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

type meHistKeyT struct {
	image   wire.ImageKey
	offset  uint64
	history uint16
}

func (db *DB) meHistRows(q Query) (map[meHistKeyT]*MeHistRow, error) {
	f := newFilter(&Query{Epochs: q.Epochs, Hosts: q.Hosts, Images: q.Images})
	rows := map[meHistKeyT]*MeHistRow{}
	if f.none {
		return rows, nil
	}
	const restLen = len(wire.ImageKey{}) + 8 + 2
	add := func(rest, k, v []byte) error {
		var key meHistKeyT
		copy(key.image[:], rest)
		if f.images != nil && !f.imset[key.image] {
			return nil
		}
		key.offset = binary.BigEndian.Uint64(rest[len(key.image):])
		key.history = binary.BigEndian.Uint16(rest[len(key.image)+8:])
		n, err := decodeCount(k, v)
		if err != nil {
			return err
		}
		r := rows[key]
		if r == nil {
			r = &MeHistRow{Image: key.image, Offset: key.offset, History: key.history}
			rows[key] = r
		}
		r.Count = addSat(r.Count, n)
		return nil
	}
	return rows, db.scanFleetOrHosts(tMeHistFleet, tMeHist, "ProfileMe history", restLen, f, add)
}

// MeAddrRow is one instruction's hot list of effective addresses (or jump
// targets), merged over the epochs and hosts a query selects.
type MeAddrRow struct {
	Image  wire.ImageKey
	Offset uint64
	List   hotlist.List
}

// MeAddrs calls fn once per instruction with an address hot list that q
// selects (q.PIDs and q.Events are ignored), its lists over q's epochs and
// hosts merged (coins seeded from the lists, so every reader gets the
// same), in (image, offset) order.
func (db *DB) MeAddrs(ctx context.Context, q Query, fn func(r *MeAddrRow) error) error {
	fn = untilDone1(ctx, fn)
	if err := db.use(false); err != nil {
		return err
	}
	rows, err := db.meAddrRows(q)
	db.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("storage: ProfileMe addresses: %w", err)
	}
	out := slices.Collect(maps.Values(rows))
	slices.SortFunc(out, func(a, b *MeAddrRow) int {
		if c := a.Image.Compare(b.Image); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	for _, r := range out {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

type meAddrKeyT struct {
	image  wire.ImageKey
	offset uint64
}

func (db *DB) meAddrRows(q Query) (map[meAddrKeyT]*MeAddrRow, error) {
	f := newFilter(&Query{Epochs: q.Epochs, Hosts: q.Hosts, Images: q.Images})
	rows := map[meAddrKeyT]*MeAddrRow{}
	if f.none {
		return rows, nil
	}
	const restLen = len(wire.ImageKey{}) + 8
	add := func(rest, k, v []byte) error {
		var key meAddrKeyT
		copy(key.image[:], rest)
		if f.images != nil && !f.imset[key.image] {
			return nil
		}
		key.offset = binary.BigEndian.Uint64(rest[len(key.image):])
		l, err := decodeList(k, v)
		if err != nil {
			return err
		}
		r := rows[key]
		if r == nil {
			rows[key] = &MeAddrRow{Image: key.image, Offset: key.offset, List: l}
			return nil
		}
		r.List = hotlist.Merge(&r.List, &l, hotlist.NewCoin(hotlist.Seed(&r.List, &l)))
		return nil
	}
	return rows, db.scanFleetOrHosts(tMeAddrFleet, tMeAddrs, "ProfileMe address", restLen, f, add)
}

// scanFleetOrHosts calls add with the part of each row's key after the
// table and epoch (rest, restLen bytes), the key and the value: from the
// fleet-wide table when f selects no hosts, else from the per-host
// table's rows of the hosts f selects. what names the rows in errors.
func (db *DB) scanFleetOrHosts(fleet, perHost byte, what string, restLen int, f *filter, add func(rest, k, v []byte) error) error {
	if f.hosts == nil {
		return db.scanTable(fleet, f, func(k, v []byte) error {
			if len(k) != 9+restLen {
				return fmt.Errorf("%w: %s key %x: length", ErrCorrupt, what, k)
			}
			return add(k[9:], k, v)
		})
	}
	return db.scanHostRows(perHost, what, restLen, f, func(host string, rest, k []byte, value func() ([]byte, error)) error {
		if !f.host(host) {
			return nil
		}
		v, err := value()
		if err != nil {
			return err
		}
		return add(rest, k, v)
	})
}

// decodeList reads a stored hot list.
func decodeList(k, v []byte) (hotlist.List, error) {
	d := bincodec.NewDecoder(v, 0)
	l := hotlist.Decode(d)
	d.End()
	if err := d.Err(); err != nil {
		return hotlist.List{}, fmt.Errorf("%w: hot list at %x: %w", ErrCorrupt, k, err)
	}
	return l, nil
}

// MeHistDropped sums the attributed ProfileMe samples whose path history
// was not kept, over q's epochs and hosts.
func (db *DB) MeHistDropped(q Query) (uint64, error) {
	if err := db.use(false); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	f := newFilter(&Query{Epochs: q.Epochs, Hosts: q.Hosts})
	var n uint64
	if f.none {
		return 0, nil
	}
	err := db.scanTable(tMeSummary, f, func(k, v []byte) error {
		host, rest, ok := cutHost(k[9:])
		if !ok || len(rest) != 1 || rest[0] != classHist || !f.host(host) {
			return nil
		}
		c, err := decodeCount(k, v)
		n = addSat(n, c)
		return err
	})
	return n, err
}
