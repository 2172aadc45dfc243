package storage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"dcpi/internal/testrand"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

func testRand(t testing.TB) *rand.Rand { return testrand.New(t) }

func openTest(t testing.TB) (*DB, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dir
}

// key is the i-th image key of the tests' small space.
var key = wiretest.Key

// batch builds a normalized, valid batch.
func batch(host string, cpu uint16, seq, epoch uint64, entries []wire.Entry, unknown []wire.UnknownEntry, drops map[string]uint64) *wire.Batch {
	b := &wire.Batch{Version: wire.Version, Host: host, CPU: cpu, Seq: seq, Epoch: epoch, Entries: entries, Unknown: unknown, Drops: drops}
	b.Normalize()
	return b
}

// streamBatch is the next batch of stream (host, cpu) over a small space —
// five images, three epochs, the offsets randQuery ranges over — so that
// batches collide and merges add up.
func streamBatch(r *rand.Rand, host string, cpu uint16, seq uint64, maxEntries int) *wire.Batch {
	o := wiretest.Options{Host: host, CPU: cpu, Seq: seq, Epoch: uint64(r.IntN(3)),
		MaxEntries: maxEntries, Images: wiretest.Keys(5)}
	if r.IntN(2) == 0 {
		o.MaxStacks = maxEntries / 2 // half the batches carry stacks
	}
	return wiretest.RandBatch(r, o)
}

// model is the database as a map: what the tests compare against.
type model struct {
	counts     map[Record]uint64 // Count field zero in keys
	unknown    map[UnknownRecord]uint64
	drops      map[[3]string]uint64 // epoch, host, name
	applied    map[streamID]uint64
	stacks     map[stackModelKey]uint64
	stackDrops map[[3]string]uint64 // epoch, host, name
}

// stackModelKey is a stack counter of the model: the stack as its
// record's bytes, which differ exactly when the stacks do.
type stackModelKey struct {
	epoch uint64
	event uint8
	host  string
	pid   uint32
	leaf  wire.ImageKey
	stack string
}

func newModel() *model {
	return &model{counts: map[Record]uint64{}, unknown: map[UnknownRecord]uint64{}, drops: map[[3]string]uint64{}, applied: map[streamID]uint64{},
		stacks: map[stackModelKey]uint64{}, stackDrops: map[[3]string]uint64{}}
}

// apply mirrors ApplyBatch; it returns what ApplyBatch should.
func (m *model) apply(b *wire.Batch) (applied, gap bool) {
	id := streamID{b.Host, b.CPU}
	switch have := m.applied[id]; {
	case b.Seq <= have:
		return false, false
	case b.Seq != have+1:
		return false, true
	}
	m.applied[id] = b.Seq
	for _, e := range b.Entries {
		m.counts[Record{Epoch: b.Epoch, Event: e.Event, Image: e.Image, Offset: e.Offset, Host: b.Host, PID: e.PID}] += e.Count
	}
	for _, u := range b.Unknown {
		m.unknown[UnknownRecord{Epoch: b.Epoch, Event: u.Event, Host: b.Host, PID: u.PID, PC: u.PC}] += u.Count
	}
	for name, n := range b.Drops {
		if n != 0 {
			m.drops[[3]string{fmt.Sprint(b.Epoch), b.Host, name}] += n
		}
	}
	for _, s := range b.Stacks {
		m.stacks[stackModelKey{b.Epoch, s.Event, b.Host, s.PID, s.Frames[0].Image, string(encodeStack(s.Truncated, s.Frames))}] += s.Count
	}
	for name, n := range b.StackDrops {
		if n != 0 {
			m.stackDrops[[3]string{fmt.Sprint(b.Epoch), b.Host, name}] += n
		}
	}
	return true, false
}

// stackView is what Stacks(q) should report, by (event, stack, host).
type stackView struct {
	event uint8
	stack string
	host  string
}

func (m *model) stackProfile(q Query) map[stackView]uint64 {
	out := map[stackView]uint64{}
	for k, n := range m.stacks {
		if !in(q.Epochs, k.epoch) || !in(q.Events, k.event) || !in(q.Hosts, k.host) || !in(q.Images, k.leaf) || !in(q.PIDs, k.pid) || !hpin(q, k.host, k.pid) {
			continue
		}
		v := stackView{k.event, k.stack, k.host}
		if q.Hosts == nil {
			v.host = ""
		}
		out[v] += n
	}
	return out
}

// stackTotals is what StackTotals(q) should report: images and PIDs do
// not select there.
func (m *model) stackTotals(q Query) (samples uint64, drops map[string]uint64) {
	drops = map[string]uint64{}
	for _, empty := range []bool{q.Epochs != nil && len(q.Epochs) == 0, q.Events != nil && len(q.Events) == 0, q.Hosts != nil && len(q.Hosts) == 0,
		q.Images != nil && len(q.Images) == 0, q.PIDs != nil && len(q.PIDs) == 0, noHostPID(q)} {
		if empty {
			return 0, drops // an empty list selects nothing
		}
	}
	for k, n := range m.stacks {
		if in(q.Epochs, k.epoch) && in(q.Events, k.event) && in(q.Hosts, k.host) {
			samples += n
		}
	}
	for k, n := range m.stackDrops {
		var e uint64
		fmt.Sscan(k[0], &e)
		if in(q.Epochs, e) && in(q.Hosts, k[1]) {
			drops[k[2]] += n
		}
	}
	return samples, drops
}

func readStacks(t testing.TB, db *DB, q Query) map[stackView]uint64 {
	t.Helper()
	out := map[stackView]uint64{}
	err := db.Stacks(t.Context(), q, func(st *Stack, event uint8, host string, count uint64) error {
		k := stackView{event, string(encodeStack(st.Truncated, st.Frames)), host}
		if _, dup := out[k]; dup {
			t.Errorf("Stacks reported %+v twice", k)
		}
		out[k] = count
		return nil
	})
	if err != nil {
		t.Fatalf("Stacks(%+v): %v", q, err)
	}
	return out
}

func in[T comparable](list []T, v T) bool {
	if list == nil {
		return true
	}
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// hpin is the per-host PID rule of Query.HostPIDs.
func hpin(q Query, host string, pid uint32) bool {
	return q.HostPIDs == nil || slices.Contains(q.HostPIDs[host], pid)
}

// noHostPID: HostPIDs names no PID that PIDs allows, so the query
// selects nothing.
func noHostPID(q Query) bool {
	if q.HostPIDs == nil {
		return false
	}
	for _, ps := range q.HostPIDs {
		for _, p := range ps {
			if in(q.PIDs, p) {
				return false
			}
		}
	}
	return true
}

type profKey struct {
	image  wire.ImageKey
	offset uint64
	event  uint8
	host   string
}

// profile is what Profile(q) should report.
func (m *model) profile(q Query) map[profKey]uint64 {
	out := map[profKey]uint64{}
	for r, n := range m.counts {
		if !in(q.Epochs, r.Epoch) || !in(q.Events, r.Event) || !in(q.Hosts, r.Host) || !in(q.Images, r.Image) || !in(q.PIDs, r.PID) || !hpin(q, r.Host, r.PID) {
			continue
		}
		k := profKey{r.Image, r.Offset, r.Event, r.Host}
		if q.Hosts == nil {
			k.host = ""
		}
		out[k] += n
	}
	return out
}

func (m *model) totals(q Query) (samples, unknown uint64, drops map[string]uint64) {
	for _, n := range m.profile(q) {
		samples += n
	}
	if q.Images == nil {
		for r, n := range m.unknown {
			if in(q.Epochs, r.Epoch) && in(q.Events, r.Event) && in(q.Hosts, r.Host) && in(q.PIDs, r.PID) && hpin(q, r.Host, r.PID) {
				unknown += n
			}
		}
	}
	drops = map[string]uint64{}
	for k, n := range m.drops {
		var e uint64
		fmt.Sscan(k[0], &e)
		if in(q.Epochs, e) && in(q.Hosts, k[1]) {
			drops[k[2]] += n
		}
	}
	return samples, unknown, drops
}

func readProfile(t testing.TB, db *DB, q Query) map[profKey]uint64 {
	t.Helper()
	out := map[profKey]uint64{}
	var last *profKey
	err := db.Profile(t.Context(), q, func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error {
		k := profKey{image, offset, event, host}
		if _, dup := out[k]; dup {
			t.Errorf("Profile reported %+v twice", k)
		}
		if last != nil && !profLess(*last, k) {
			t.Errorf("Profile order: %+v after %+v", k, *last)
		}
		last = &k
		out[k] = count
		return nil
	})
	if err != nil {
		t.Fatalf("Profile(%+v): %v", q, err)
	}
	return out
}

func profLess(a, b profKey) bool {
	if a.event != b.event {
		return a.event < b.event
	}
	if c := a.image.Compare(b.image); c != 0 {
		return c < 0
	}
	if a.offset != b.offset {
		return a.offset < b.offset
	}
	return a.host < b.host
}
