package storage

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"dcpi/wire"
)

// ProfileMe tables (doc.go): the sums of wire.MeEntry per field, only the
// nonzero ones, host-major and rolled up over hosts and PIDs, plus the
// counters conservation reads.
const (
	tMe        = 'M' // epoch host\0 image offset pid field → sum
	tMeFleet   = 'G' // epoch image offset field → sum over hosts and PIDs
	tMeSummary = 'S' // epoch host\0 class → samples, class 'k' in entries, 'u' unknown
	tMeDrops   = 'D' // epoch host\0 name → ProfileMe samples dropped
)

func meKey(epoch uint64, host string, e *wire.MeEntry, field int) []byte {
	b := append(make([]byte, 0, 60+len(host)), tMe)
	b = appendU64(b, epoch)
	b = appendHost(b, host)
	b = append(b, e.Image[:]...)
	b = appendU64(b, e.Offset)
	b = binary.BigEndian.AppendUint32(b, e.PID)
	return append(b, byte(field))
}

func meFleetKey(epoch uint64, e *wire.MeEntry, field int) []byte {
	b := append(make([]byte, 0, 52), tMeFleet)
	b = appendU64(b, epoch)
	b = append(b, e.Image[:]...)
	b = appendU64(b, e.Offset)
	return append(b, byte(field))
}

func meSummaryKey(epoch uint64, host string, class byte) []byte {
	b := append(make([]byte, 0, 11+len(host)), tMeSummary)
	b = appendU64(b, epoch)
	b = appendHost(b, host)
	return append(b, class)
}

func meDropKey(epoch uint64, host, name string) []byte {
	b := append(make([]byte, 0, 10+len(host)+len(name)), tMeDrops)
	b = appendU64(b, epoch)
	b = appendHost(b, host)
	return append(b, name...)
}

// addMe collects the merges of a valid batch's ProfileMe section: every
// nonzero field of every entry, host-major and rolled up, the samples in
// entries and unknown, and the drops.
func (w *batchWriter) addMe(b *wire.Batch) {
	var known uint64
	for i := range b.Me {
		e := &b.Me[i]
		for f, v := range e.Counts {
			if v != 0 {
				w.misc.add(meKey(b.Epoch, b.Host, e, f), v)
				w.misc.add(meFleetKey(b.Epoch, e, f), v)
			}
		}
		known += e.Counts[wire.MeSamples] // Validate bounds the batch's total
	}
	if known != 0 {
		w.misc.add(meSummaryKey(b.Epoch, b.Host, classKnow), known)
	}
	if b.MeUnknown != 0 {
		w.misc.add(meSummaryKey(b.Epoch, b.Host, classUnkn), b.MeUnknown)
	}
	for name, n := range b.MeDrops {
		if n != 0 {
			w.misc.add(meDropKey(b.Epoch, b.Host, name), n)
		}
	}
	w.addMeHist(b)
}

// hasMe reports whether b carries anything for the ProfileMe tables.
func hasMe(b *wire.Batch) bool {
	return len(b.Me) > 0 || b.MeUnknown > 0 || len(b.MeDrops) > 0 || len(b.MeHist) > 0 || b.MeHistDropped > 0
}

// MeRow is one instruction's ProfileMe sums, over the epochs and PIDs a
// query selects; Host is "" when summed over hosts too.
type MeRow struct {
	Image  wire.ImageKey
	Offset uint64
	Host   string
	Counts wire.MeCounts
}

type meRowKey struct {
	image  wire.ImageKey
	offset uint64
	host   string
}

// MeProfile calls fn once per (image, offset, host) that q selects, with
// the ProfileMe sums over the selected epochs and PIDs, in (image,
// offset, host) order. When q.Hosts is nil the sums are over hosts too
// and Host is "", read from the roll-up unless q.PIDs is set. q.Events is
// ignored: a ProfileMe sample is of an instruction, not of an event.
func (db *DB) MeProfile(ctx context.Context, q Query, fn func(r *MeRow) error) error {
	fn = untilDone1(ctx, fn)
	if err := db.use(false); err != nil {
		return err
	}
	rows, err := db.meRows(q)
	db.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("storage: ProfileMe profile: %w", err)
	}
	keys := make([]meRowKey, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b meRowKey) int {
		if c := a.image.Compare(b.image); c != 0 {
			return c
		}
		if c := cmp.Compare(a.offset, b.offset); c != 0 {
			return c
		}
		return cmp.Compare(a.host, b.host)
	})
	for _, k := range keys {
		r := MeRow{Image: k.image, Offset: k.offset, Host: k.host, Counts: *rows[k]}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return nil
}

// meRows sums the selected keys into rows (with db.mu read-held).
func (db *DB) meRows(q Query) (map[meRowKey]*wire.MeCounts, error) {
	f := newFilter(&q)
	rows := map[meRowKey]*wire.MeCounts{}
	if f.none {
		return rows, nil
	}
	add := func(k meRowKey, field byte, kb, v []byte) error {
		if int(field) >= wire.MeFields {
			return fmt.Errorf("%w: ProfileMe key %x: field %d", ErrCorrupt, kb, field)
		}
		if f.images != nil && !f.imset[k.image] {
			return nil
		}
		n, err := decodeCount(kb, v)
		if err != nil {
			return err
		}
		c := rows[k]
		if c == nil {
			c = &wire.MeCounts{}
			rows[k] = c
		}
		c[field] = addSat(c[field], n)
		return nil
	}
	if f.hosts == nil && f.pids == nil {
		err := db.scanTable(tMeFleet, f, func(k, v []byte) error {
			if len(k) != 1+8+len(wire.ImageKey{})+8+1 {
				return fmt.Errorf("%w: ProfileMe roll-up key %x: length", ErrCorrupt, k)
			}
			var rk meRowKey
			copy(rk.image[:], k[9:])
			rk.offset = binary.BigEndian.Uint64(k[9+len(rk.image):])
			return add(rk, k[len(k)-1], k, v)
		})
		return rows, err
	}
	err := db.scanHostRows(tMe, "ProfileMe", len(wire.ImageKey{})+8+4+1, f, func(host string, rest, k []byte, value func() ([]byte, error)) error {
		if !f.host(host) || !f.pidOn(host, binary.BigEndian.Uint32(rest[len(rest)-5:])) {
			return nil
		}
		var rk meRowKey
		copy(rk.image[:], rest)
		rk.offset = binary.BigEndian.Uint64(rest[len(rk.image):])
		if q.Hosts != nil {
			rk.host = host
		}
		v, err := value()
		if err != nil {
			return err
		}
		return add(rk, rest[len(rest)-1], k, v)
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// MeTotals sums the ProfileMe view's conservation counters over q's
// epochs and hosts: samples stored in entries, samples stored as unknown,
// and each drop counter. Per stream, they add up to the instructions the
// hardware tagged. Only q's epochs and hosts select.
func (db *DB) MeTotals(q Query) (samples, unknown uint64, drops map[string]uint64, err error) {
	if err := db.use(false); err != nil {
		return 0, 0, nil, err
	}
	defer db.mu.RUnlock()
	f := newFilter(&Query{Epochs: q.Epochs, Hosts: q.Hosts})
	drops = map[string]uint64{}
	if f.none {
		return 0, 0, drops, nil
	}
	err = db.scanTable(tMeSummary, f, func(k, v []byte) error {
		if len(k) < 10 {
			return fmt.Errorf("%w: ProfileMe summary key %x: short", ErrCorrupt, k)
		}
		host, rest, ok := cutHost(k[9:])
		if !ok || len(rest) != 1 || (rest[0] != classKnow && rest[0] != classUnkn && rest[0] != classHist) {
			return fmt.Errorf("%w: ProfileMe summary key %x: bad host or class", ErrCorrupt, k)
		}
		if !f.host(host) || rest[0] == classHist {
			return nil // history drops are not sample drops (MeHistDropped)
		}
		n, err := decodeCount(k, v)
		if rest[0] == classKnow {
			samples = addSat(samples, n)
		} else {
			unknown = addSat(unknown, n)
		}
		return err
	})
	if err == nil {
		err = db.scanDropTable(tMeDrops, "ProfileMe", f, drops)
	}
	if err != nil {
		return 0, 0, nil, fmt.Errorf("storage: ProfileMe totals: %w", err)
	}
	return samples, unknown, drops, nil
}
