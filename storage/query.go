package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"dcpi/wire"
)

// Query selects part of the database. A nil list selects everything along
// its dimension; a non-nil empty list selects nothing.
type Query struct {
	Epochs []uint64
	Events []uint8
	Hosts  []string
	Images []wire.ImageKey
	// PIDs selects per-process counts (those the daemon keeps for the
	// images its configuration names); PID 0 is every sample not kept per
	// process.
	PIDs []uint32
	// HostPIDs, when not nil, narrows the PIDs per host: a sample of
	// host h is selected only if its PID is among HostPIDs[h] (none for
	// a host it does not name), as well as by PIDs. The process
	// selectors (binary=, pid=, process labels) resolve to it, since a
	// PID means a process only on its own host.
	HostPIDs map[string][]uint32 `json:",omitempty"`
}

// Record is one stored count: the finest grain of the database.
type Record struct {
	Epoch  uint64
	Event  uint8
	Image  wire.ImageKey
	Offset uint64
	Host   string
	PID    uint32
	Count  uint64
}

// UnknownRecord is one count of the unknown profile: samples no image map
// covered.
type UnknownRecord struct {
	Epoch uint64
	Event uint8
	Host  string
	PID   uint32
	PC    uint64
	Count uint64
}

// filter is a Query prepared for scanning: sorted, deduplicated lists and
// sets.
type filter struct {
	epochs []uint64 // nil: all
	events []uint8  // nil: all
	evset  [256]bool
	images []wire.ImageKey // nil: all
	imset  map[wire.ImageKey]bool
	hosts  map[string]bool // nil: all
	hostl  []string        // hosts, sorted
	pids   map[uint32]bool // nil: all
	// hostPIDs is Query.HostPIDs as sets (nil: no per-host narrowing);
	// pids then holds at most their union, so the roll-ups that have no
	// PID are never read.
	hostPIDs map[string]map[uint32]bool
	none     bool // some list is empty: nothing matches
}

func newFilter(q *Query) *filter {
	f := &filter{}
	if q.Epochs != nil {
		f.epochs = slices.Compact(slices.Sorted(slices.Values(q.Epochs)))
		f.none = f.none || len(f.epochs) == 0
	}
	if q.Events != nil {
		f.events = slices.Compact(slices.Sorted(slices.Values(q.Events)))
		for _, e := range f.events {
			f.evset[e] = true
		}
		f.none = f.none || len(f.events) == 0
	}
	if q.Images != nil {
		f.images = slices.CompactFunc(slices.SortedFunc(slices.Values(q.Images), wire.ImageKey.Compare),
			func(a, b wire.ImageKey) bool { return a == b })
		f.imset = map[wire.ImageKey]bool{}
		for _, k := range f.images {
			f.imset[k] = true
		}
		f.none = f.none || len(f.images) == 0
	}
	if q.Hosts != nil {
		f.hosts = map[string]bool{}
		for _, h := range q.Hosts {
			f.hosts[h] = true
		}
		f.hostl = slices.Compact(slices.Sorted(slices.Values(q.Hosts)))
		f.none = f.none || len(f.hosts) == 0
	}
	if q.PIDs != nil {
		f.pids = map[uint32]bool{}
		for _, p := range q.PIDs {
			f.pids[p] = true
		}
		f.none = f.none || len(f.pids) == 0
	}
	if q.HostPIDs != nil {
		union := map[uint32]bool{}
		f.hostPIDs = map[string]map[uint32]bool{}
		for h, ps := range q.HostPIDs {
			set := map[uint32]bool{}
			for _, p := range ps {
				if f.pids == nil || f.pids[p] {
					set[p], union[p] = true, true
				}
			}
			f.hostPIDs[h] = set
		}
		f.pids = union
		f.none = f.none || len(union) == 0
	}
	return f
}

// pidOn says whether a sample of host with PID p is selected by the
// query's PIDs and per-host PIDs (not by its hosts: see host).
func (f *filter) pidOn(host string, p uint32) bool {
	if f.hostPIDs != nil {
		return f.hostPIDs[host][p]
	}
	return f.pid(p)
}

func (f *filter) event(e uint8) bool { return f.events == nil || f.evset[e] }
func (f *filter) host(h string) bool { return f.hosts == nil || f.hosts[h] }
func (f *filter) pid(p uint32) bool  { return f.pids == nil || f.pids[p] }
func (f *filter) nextEvent(e uint8) (uint8, bool) {
	i, _ := slices.BinarySearch(f.events, e+1)
	if e == 255 || i == len(f.events) {
		return 0, false
	}
	return f.events[i], true
}

// nextHost is the first selected host after h (in key order, which is
// string order).
func (f *filter) nextHost(h string) (string, bool) {
	i, found := slices.BinarySearch(f.hostl, h)
	if found {
		i++
	}
	if i == len(f.hostl) {
		return "", false
	}
	return f.hostl[i], true
}

// nextImage is the first selected image after k.
func (f *filter) nextImage(k []byte) (wire.ImageKey, bool) {
	i, _ := slices.BinarySearchFunc(f.images, k, func(a wire.ImageKey, k []byte) int { return bytes.Compare(a[:], k) })
	for i < len(f.images) && bytes.Equal(f.images[i][:], k) {
		i++
	}
	if i == len(f.images) {
		return wire.ImageKey{}, false
	}
	return f.images[i], true
}

// epochsOf returns the epochs to scan in table: the query's, or every epoch
// present, found by skipping from one epoch's prefix to the next.
func (db *DB) epochsOf(table byte, f *filter) ([]uint64, error) {
	if f.epochs != nil {
		return f.epochs, nil
	}
	it, err := db.newIter(&pebble.IterOptions{LowerBound: []byte{table}, UpperBound: []byte{table + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []uint64
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) < 1+8 {
			return nil, fmt.Errorf("%w: key %x: short", ErrCorrupt, k)
		}
		e := binary.BigEndian.Uint64(k[1:])
		out = append(out, e)
		if e == ^uint64(0) {
			break
		}
		ok = it.SeekGE(appendU64([]byte{table}, e+1))
	}
	return out, it.Error()
}

// cursor walks one range of the 'c', 'f' or 'h' table — an epoch, or in
// 'h' one host's part of an epoch — skipping to the next selected event or
// image with a seek instead of reading past rows. Every table's keys go on
// from the range's prefix with event, image and offset, and then host and
// PID ('c'), PID ('h') or nothing ('f').
type cursor struct {
	it     *iterator
	table  byte
	pre    []byte // the range's prefix: table epoch, and host\0 in 'h'
	host   []byte // 'h': the range's host\0
	f      *filter
	count  uint64
	gkey   []byte // the row's grouping key: event image offset [host\0 [pid]]
	byHost bool   // group by host
	byPID  bool   // group by host and PID ('h' only)
	buf    []byte // an 'h' row's grouping key, which its key does not hold in one piece
	err    error
}

// rowLen is the length of the event image offset part of a counts key.
const rowLen = 1 + keyLen + 8

func (db *DB) newCursor(table byte, pre []byte, f *filter, byHost, byPID bool) (*cursor, error) {
	it, err := db.newIter(&pebble.IterOptions{LowerBound: pre, UpperBound: prefixEnd(pre)})
	if err != nil {
		return nil, err
	}
	c := &cursor{it: it, table: table, pre: pre, f: f, byHost: byHost, byPID: byPID}
	if table == tHosts {
		c.host = pre[offEvent:]
	}
	if len(f.events) > 0 {
		c.seek(f.events[0], nil)
	} else {
		it.First()
	}
	return c, nil
}

// seek moves to the range's first row of event ev, and of image img if
// not nil.
func (c *cursor) seek(ev uint8, img []byte) {
	k := append(append(make([]byte, 0, len(c.pre)+rowLen), c.pre...), ev)
	c.it.SeekGE(append(k, img...))
}

// settle moves forward to the first selected row at or after the
// iterator's position; false at the end or on error (c.err).
func (c *cursor) settle() bool {
	f := c.f
	p := len(c.pre)
	for c.it.Valid() {
		k := c.it.Key()
		if len(k) < p+rowLen {
			c.err = fmt.Errorf("%w: %c key %x: short", ErrCorrupt, c.table, k)
			return false
		}
		ev := k[p]
		if !f.event(ev) {
			nev, ok := f.nextEvent(ev)
			if !ok {
				return false
			}
			c.seek(nev, nil)
			continue
		}
		img := k[p+1 : p+1+keyLen]
		if f.images != nil && !f.imset[wire.ImageKey(img)] {
			if next, ok := f.nextImage(img); ok {
				c.seek(ev, next[:])
			} else if nev, ok := f.nextEvent(ev); ok {
				c.seek(nev, nil)
			} else if f.events == nil && ev < 255 {
				c.seek(ev+1, nil)
			} else {
				return false
			}
			continue
		}
		row, rest := k[p:p+rowLen], k[p+rowLen:]
		switch c.table {
		case tCounts:
			host, pid, ok := cutHost(rest)
			if !ok || len(pid) != 4 {
				c.err = fmt.Errorf("%w: counts key %x: bad host or pid", ErrCorrupt, k)
				return false
			}
			if !f.host(host) {
				// Skip to the next selected host at this offset, or
				// to the next offset: with many hosts and few
				// selected, most rows are never read (but each
				// offset costs a seek: the 'h' table is the better
				// path when it can be taken).
				if h, ok := f.nextHost(host); ok {
					c.it.SeekGE(appendHost(bytes.Clone(k[:p+rowLen]), h))
				} else {
					c.it.SeekGE(prefixEnd(k[:p+rowLen]))
				}
				continue
			}
			if !f.pidOn(host, binary.BigEndian.Uint32(pid)) {
				c.it.Next()
				continue
			}
			c.gkey = row
			if c.byHost {
				c.gkey = k[p : len(k)-4]
			}
		case tHosts:
			if len(rest) != 4 {
				c.err = fmt.Errorf("%w: hosts key %x: %d bytes, want %d", ErrCorrupt, k, len(k), p+rowLen+4)
				return false
			}
			if !f.pid(binary.BigEndian.Uint32(rest)) || (f.hostPIDs != nil && !f.hostPIDs[string(c.host[:len(c.host)-1])][binary.BigEndian.Uint32(rest)]) {
				c.it.Next()
				continue
			}
			c.buf = append(append(c.buf[:0], row...), c.host...)
			if c.byPID {
				c.buf = append(c.buf, rest...)
			}
			c.gkey = c.buf
		default:
			if len(rest) != 0 {
				c.err = fmt.Errorf("%w: fleet key %x: %d bytes, want %d", ErrCorrupt, k, len(k), p+rowLen)
				return false
			}
			c.gkey = row
		}
		v, err := c.it.ValueAndErr()
		if err != nil {
			c.err = fmt.Errorf("storage: read %x: %w", k, err)
			return false
		}
		if c.count, c.err = decodeCount(k, v); c.err != nil {
			return false
		}
		return true
	}
	if err := c.it.Error(); err != nil {
		c.err = fmt.Errorf("storage: scan: %w", err)
	}
	return false
}

func (c *cursor) next() bool {
	c.it.Next()
	return c.settle()
}

// record is the current row as a Record ('c' or 'h').
func (c *cursor) record() (Record, error) {
	var row countsRow
	var err error
	if c.table == tHosts {
		row, err = decodeHostsKey(c.it.Key())
	} else {
		row, err = decodeCountsKey(c.it.Key())
	}
	return Record{Epoch: row.epoch, Event: row.event, Image: row.image, Offset: row.offset, Host: row.host, PID: row.pid, Count: c.count}, err
}

// maxHostCursors bounds the (epoch, host) ranges a query reads from the
// 'h' table at once, each through its own Pebble iterator; a query
// selecting more reads 'c' instead, seeking past the unselected hosts.
const maxHostCursors = 256

// countsTable picks the table a query of f reads: the fleet roll-up
// when it sums over hosts and PIDs, the host-major 'h' when it names few
// enough hosts (one range scan per epoch and host rather than a seek per
// offset), else 'c'.
func (db *DB) countsTable(f *filter) (table byte, epochs []uint64, err error) {
	switch {
	case f.hosts == nil && f.pids == nil:
		table = tFleet
	case f.hosts == nil:
		table = tCounts
	default:
		table = tHosts
	}
	if epochs, err = db.epochsOf(table, f); err != nil {
		return 0, nil, err
	}
	if table == tHosts && len(epochs)*len(f.hostl) > maxHostCursors {
		table = tCounts // 'c' and 'h' are written together: the same epochs
	}
	return table, epochs, nil
}

// openCursors opens the cursors of table over epochs (for 'h', one per
// epoch and selected host), each settled on its first selected row after
// the grouping key from (nil: from the start); cursors with no such row
// are closed and left out.
func (db *DB) openCursors(table byte, epochs []uint64, f *filter, byHost, byPID bool, from []byte) (cursorHeap, error) {
	var h cursorHeap
	open := func(pre []byte) error {
		c, err := db.newCursor(table, pre, f, byHost, byPID)
		if err != nil {
			return err
		}
		if from != nil {
			// From's event image offset, and for 'c' its host.
			at := from
			if table == tHosts {
				at = from[:rowLen]
			}
			c.it.SeekGE(append(bytes.Clone(pre), at...))
		}
		ok := c.settle()
		for ok && from != nil && bytes.Compare(c.gkey, from) <= 0 {
			ok = c.next()
		}
		if !ok {
			c.it.Close()
			return c.err
		}
		h = append(h, c)
		return nil
	}
	for _, e := range epochs {
		if table != tHosts {
			if err := open(appendU64([]byte{table}, e)); err != nil {
				h.close()
				return nil, err
			}
			continue
		}
		for _, host := range f.hostl {
			if err := open(hostsPrefix(e, host)); err != nil {
				h.close()
				return nil, err
			}
		}
	}
	h.init()
	return h, nil
}

// Profile calls fn once per (image, offset, event, host) that q selects, in
// order of (event, image, offset, host), with the count summed over the
// selected epochs and PIDs. When q.Hosts is nil the count is summed over
// hosts too and host is "": a fleet-wide profile, read from the roll-up
// (one key per offset, whatever the number of hosts) unless q.PIDs is set.
// fn must not call Close; an error from fn stops the scan and is returned.
func (db *DB) Profile(ctx context.Context, q Query, fn func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error) error {
	return db.ProfileAfter(ctx, q, nil, fn)
}

// ProfileKey is the position of a Profile row: its grouping key. Host is ""
// when the query sums over hosts.
type ProfileKey struct {
	Event  uint8
	Image  wire.ImageKey
	Offset uint64
	Host   string
}

// gkey is k as a cursor's grouping key.
func (k *ProfileKey) gkey(byHost bool) []byte {
	b := append([]byte{k.Event}, k.Image[:]...)
	b = appendU64(b, k.Offset)
	if byHost {
		b = appendHost(b, k.Host)
	}
	return b
}

// ProfileAfter is Profile starting after the row at position after (nil:
// from the start), for paged reads: each cursor seeks past it, so a page
// costs the rows it reads, not the rows before it.
func (db *DB) ProfileAfter(ctx context.Context, q Query, after *ProfileKey, fn func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error) error {
	fn = untilDone5(ctx, fn)
	if err := db.use(false); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	f := newFilter(&q)
	if f.none {
		return nil
	}
	byHost := q.Hosts != nil
	table, epochs, err := db.countsTable(f)
	if err != nil {
		return fmt.Errorf("storage: profile: %w", err)
	}
	var from []byte
	if after != nil {
		from = after.gkey(byHost)
	}
	// Merge the cursors' ordered streams (epochs, and hosts in 'h'),
	// summing rows with equal grouping keys (within a cursor they are
	// adjacent: PIDs, or hosts when summed).
	h, err := db.openCursors(table, epochs, f, byHost, false, from)
	if err != nil {
		return fmt.Errorf("storage: profile: %w", err)
	}
	defer func() { h.close() }() // those not yet closed
	var cur []byte
	for len(h) > 0 {
		cur = append(cur[:0], h[0].gkey...)
		var sum uint64
		for len(h) > 0 && bytes.Equal(h[0].gkey, cur) {
			c := h[0]
			s, carry := bits.Add64(sum, c.count, 0)
			if carry != 0 {
				s = ^uint64(0)
			}
			sum = s
			if c.next() {
				h.fix(0)
			} else {
				c.it.Close()
				h.pop()
				if c.err != nil {
					return c.err
				}
			}
		}
		// cur: event image offset [host \0]
		var img wire.ImageKey
		copy(img[:], cur[1:1+keyLen])
		off := binary.BigEndian.Uint64(cur[1+keyLen:])
		host := ""
		if byHost {
			host = string(cur[1+keyLen+8 : len(cur)-1])
		}
		if err := fn(img, off, cur[0], host, sum); err != nil {
			return err
		}
	}
	return nil
}

// cursorHeap is a min-heap of cursors by grouping key.
type cursorHeap []*cursor

func (h cursorHeap) less(i, j int) bool { return bytes.Compare(h[i].gkey, h[j].gkey) < 0 }

func (h cursorHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h cursorHeap) fix(i int) { h.down(i) }

// close closes the cursors' iterators.
func (h cursorHeap) close() {
	for _, c := range h {
		c.it.Close()
	}
}

func (h *cursorHeap) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
}

func (h cursorHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// Records calls fn for every stored count q selects, unsummed, in key order:
// epoch, event, image, offset, host, PID.
func (db *DB) Records(q Query, fn func(Record) error) error {
	if err := db.use(false); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	f := newFilter(&q)
	if f.none {
		return nil
	}
	table, epochs, err := db.countsTable(f)
	if err != nil {
		return fmt.Errorf("storage: records: %w", err)
	}
	if table == tFleet {
		table = tCounts // the roll-up has no hosts or PIDs
	}
	// An epoch at a time; in 'h', its hosts' streams merged into key order.
	for _, e := range epochs {
		h, err := db.openCursors(table, []uint64{e}, f, true, true, nil)
		if err != nil {
			return fmt.Errorf("storage: records: %w", err)
		}
		for len(h) > 0 {
			c := h[0]
			r, err := c.record()
			if err == nil {
				err = fn(r)
			}
			if err != nil {
				h.close()
				return err
			}
			if c.next() {
				h.fix(0)
				continue
			}
			c.it.Close()
			h.pop()
			if c.err != nil {
				h.close()
				return c.err
			}
		}
	}
	return nil
}

// Unknown calls fn for every count of the unknown profile that q selects, in
// key order: epoch, event, host, PID, PC. Unknown samples have no image, so
// a query that lists images selects none.
func (db *DB) Unknown(q Query, fn func(UnknownRecord) error) error {
	if err := db.use(false); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	f := newFilter(&q)
	if f.none || f.images != nil {
		return nil
	}
	return db.scanTable(tUnknown, f, func(k, v []byte) error {
		if len(k) < 10 {
			return fmt.Errorf("%w: unknown key %x: short", ErrCorrupt, k)
		}
		r := UnknownRecord{Epoch: binary.BigEndian.Uint64(k[1:]), Event: k[9]}
		host, rest, ok := cutHost(k[10:])
		if !ok || len(rest) != 12 {
			return fmt.Errorf("%w: unknown key %x: bad host, pid or pc", ErrCorrupt, k)
		}
		r.Host, r.PID, r.PC = host, binary.BigEndian.Uint32(rest), binary.BigEndian.Uint64(rest[4:])
		if !f.event(r.Event) || !f.host(r.Host) || !f.pidOn(r.Host, r.PID) {
			return nil
		}
		n, err := decodeCount(k, v)
		if err != nil {
			return err
		}
		r.Count = n
		return fn(r)
	})
}

// scanTable calls fn for each key of table in the selected epochs (every
// table but 'a', 'i', 'm' starts with the epoch).
func (db *DB) scanTable(table byte, f *filter, fn func(k, v []byte) error) error {
	var ranges [][2][]byte
	if f.epochs == nil {
		ranges = append(ranges, [2][]byte{{table}, {table + 1}})
	} else {
		for _, e := range f.epochs {
			lo := appendU64([]byte{table}, e)
			ranges = append(ranges, [2][]byte{lo, prefixEnd(lo)})
		}
	}
	for _, r := range ranges {
		it, err := db.newIter(&pebble.IterOptions{LowerBound: r[0], UpperBound: r[1]})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return fmt.Errorf("storage: read %x: %w", it.Key(), err)
			}
			if err := fn(it.Key(), v); err != nil {
				it.Close()
				return err
			}
		}
		err = it.Error()
		it.Close()
		if err != nil {
			return fmt.Errorf("storage: scan: %w", err)
		}
	}
	return nil
}

// Totals sums what q selects, for conservation checks: samples stored with
// an image, samples stored as unknown, and each drop counter. Unknown
// samples have no image, so a query listing images counts none; drops have
// neither event, image nor PID, so only q's epochs and hosts select them.
// Without images or PIDs in q, samples and unknown come from the per-host
// summary, not from a scan of the profiles.
func (db *DB) Totals(q Query) (samples, unknown uint64, drops map[string]uint64, err error) {
	if err := db.use(false); err != nil {
		return 0, 0, nil, err
	}
	f := newFilter(&q)
	drops = map[string]uint64{}
	add := func(s *uint64, n uint64) {
		v, c := bits.Add64(*s, n, 0)
		if c != 0 {
			v = ^uint64(0)
		}
		*s = v
	}
	summary := f.images == nil && f.pids == nil
	if summary && !f.none {
		err = db.scanTable(tSummary, f, func(k, v []byte) error {
			if len(k) < 11 {
				return fmt.Errorf("%w: summary key %x: short", ErrCorrupt, k)
			}
			host, rest, ok := cutHost(k[10:])
			if !ok || len(rest) != 1 || (rest[0] != classKnow && rest[0] != classUnkn) {
				return fmt.Errorf("%w: summary key %x: bad host or class", ErrCorrupt, k)
			}
			if !f.event(k[9]) || !f.host(host) {
				return nil
			}
			n, err := decodeCount(k, v)
			if err != nil {
				return err
			}
			if rest[0] == classKnow {
				add(&samples, n)
			} else {
				add(&unknown, n)
			}
			return nil
		})
	}
	if err == nil && !(q.Epochs != nil && len(q.Epochs) == 0) && !(q.Hosts != nil && len(q.Hosts) == 0) {
		err = db.scanTable(tDrops, f, func(k, v []byte) error {
			if len(k) < 10 {
				return fmt.Errorf("%w: drop key %x: short", ErrCorrupt, k)
			}
			host, name, ok := cutHost(k[9:])
			if !ok || wire.CheckDropName(string(name)) != nil {
				return fmt.Errorf("%w: drop key %x: bad host or name", ErrCorrupt, k)
			}
			if !f.host(host) {
				return nil
			}
			n, err := decodeCount(k, v)
			if err != nil {
				return err
			}
			s := drops[string(name)]
			add(&s, n)
			drops[string(name)] = s
			return nil
		})
	}
	db.mu.RUnlock()
	if err != nil {
		return 0, 0, nil, fmt.Errorf("storage: totals: %w", err)
	}
	if !summary {
		// Profiles carry images and PIDs; the summary does not.
		err = db.Profile(context.Background(), q, func(_ wire.ImageKey, _ uint64, _ uint8, _ string, n uint64) error {
			add(&samples, n)
			return nil
		})
		if err == nil && f.images == nil {
			err = db.Unknown(q, func(r UnknownRecord) error {
				add(&unknown, r.Count)
				return nil
			})
		}
		if err != nil {
			return 0, 0, nil, fmt.Errorf("storage: totals: %w", err)
		}
	}
	return samples, unknown, drops, nil
}

// Hosts lists the hosts that have applied batches, sorted.
func (db *DB) Hosts() ([]string, error) {
	if err := db.use(false); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	it, err := db.newIter(&pebble.IterOptions{LowerBound: []byte{tApplied}, UpperBound: []byte{tApplied + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var hosts []string
	for ok := it.First(); ok; {
		host, rest, okh := cutHost(it.Key()[1:])
		if !okh || len(rest) != 2 {
			return nil, fmt.Errorf("%w: applied key %x", ErrCorrupt, it.Key())
		}
		hosts = append(hosts, host)
		// Skip this host's other CPUs.
		ok = it.SeekGE(prefixEnd(appendHost([]byte{tApplied}, host)))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("storage: hosts: %w", err)
	}
	return hosts, nil // key order is name order: NUL ends each name
}
