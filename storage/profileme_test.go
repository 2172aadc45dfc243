package storage

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

type meModelKey struct {
	epoch  uint64
	host   string
	image  wire.ImageKey
	offset uint64
	pid    uint32
}

// meModel is the ProfileMe tables as maps.
type meModel struct {
	rows           map[meModelKey]wire.MeCounts
	known, unknown map[[2]string]uint64 // (epoch, host)
	drops          map[[3]string]uint64 // (epoch, host, name)
}

func (m *meModel) apply(b *wire.Batch) {
	eh := [2]string{string(rune('0' + b.Epoch)), b.Host}
	for _, e := range b.Me {
		k := meModelKey{b.Epoch, b.Host, e.Image, e.Offset, e.PID}
		c := m.rows[k]
		c.Add(&e.Counts)
		m.rows[k] = c
		m.known[eh] += e.Counts[wire.MeSamples]
	}
	m.unknown[eh] += b.MeUnknown
	for name, n := range b.MeDrops {
		m.drops[[3]string{eh[0], eh[1], name}] += n
	}
}

// profile is what MeProfile should return for q (epochs, hosts, PIDs and
// images only).
func (m *meModel) profile(q Query) map[string]wire.MeCounts {
	out := map[string]wire.MeCounts{}
	for k, c := range m.rows {
		if q.Epochs != nil && !in(q.Epochs, k.epoch) || q.Hosts != nil && !in(q.Hosts, k.host) ||
			q.PIDs != nil && !in(q.PIDs, k.pid) || q.Images != nil && !in(q.Images, k.image) {
			continue
		}
		rk := meModelKey{image: k.image, offset: k.offset}
		if q.Hosts != nil {
			rk.host = k.host
		}
		s := rowName(rk.image, rk.offset, rk.host)
		v := out[s]
		v.Add(&c)
		out[s] = v
	}
	return out
}

func rowName(image wire.ImageKey, offset uint64, host string) string {
	return fmt.Sprintf("%v/%#x/%s", image, offset, host)
}

func readMe(t *testing.T, db *DB, q Query) map[string]wire.MeCounts {
	t.Helper()
	out := map[string]wire.MeCounts{}
	var last *MeRow
	err := db.MeProfile(t.Context(), q, func(r *MeRow) error {
		if last != nil && !(last.Image.Compare(r.Image) < 0 || last.Image == r.Image && (last.Offset < r.Offset || last.Offset == r.Offset && last.Host < r.Host)) {
			t.Fatalf("rows out of order: %v/%d/%s then %v/%d/%s", last.Image, last.Offset, last.Host, r.Image, r.Offset, r.Host)
		}
		c := *r
		last = &c
		out[rowName(r.Image, r.Offset, r.Host)] = r.Counts
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestProfileMeTables applies random streams of ProfileMe batches, with
// redeliveries, as deltas: the stored sums equal the model's under every
// kind of query (roll-up, by host, by PID, by epoch, by image), MeTotals
// equals the samples and drops applied once, and a batch whose version
// cannot carry ProfileMe samples is refused, changing nothing.
func TestProfileMeTables(t *testing.T) {
	r := testRand(t)
	db, _ := openTest(t)
	m := &meModel{rows: map[meModelKey]wire.MeCounts{}, known: map[[2]string]uint64{}, unknown: map[[2]string]uint64{}, drops: map[[3]string]uint64{}}
	images := wiretest.Keys(3)
	for _, host := range []string{"h1", "h2"} {
		for cpu := range uint16(2) {
			var ds []Delta
			for seq := uint64(1); seq <= 8; seq++ {
				b := wiretest.RandBatch(r, wiretest.Options{Host: host, CPU: cpu, Seq: seq, Epoch: 1 + seq/5, MaxEntries: 4, Images: images})
				if seq%4 != 0 {
					wiretest.AddMe(r, b, images, 6, 10)
				}
				m.apply(b)
				ds = append(ds, Delta{Batch: b, Last: seq})
				if seq%3 == 0 {
					ds = append(ds, Delta{Batch: wiretest.Clone(b), Last: seq}) // a redelivery
				}
			}
			out, err := db.ApplyDeltas(ds)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(slices.DeleteFunc(out, func(o Outcome) bool { return o != Duplicate })); n != 2 {
				t.Fatalf("%d duplicates, want 2", n)
			}
		}
	}
	for _, q := range []Query{{}, {Hosts: []string{"h2"}}, {Hosts: []string{"h1", "h2"}}, {PIDs: []uint32{1, 2}},
		{Epochs: []uint64{2}}, {Images: []wire.ImageKey{images[1]}}, {Hosts: []string{}}} {
		got, want := readMe(t, db, q), m.profile(q)
		if !maps.Equal(got, want) {
			t.Fatalf("query %+v: %d rows, want %d\n got %v\nwant %v", q, len(got), len(want), got, want)
		}
	}
	checkTotals := func() {
		t.Helper()
		for _, hosts := range [][]string{nil, {"h1"}} {
			var wk, wu uint64
			wd := map[string]uint64{}
			for k, n := range m.known {
				if hosts == nil || in(hosts, k[1]) {
					wk += n
					wu += m.unknown[k]
				}
			}
			for k, n := range m.drops {
				if hosts == nil || in(hosts, k[1]) {
					wd[k[2]] += n
				}
			}
			k, u, d, err := db.MeTotals(Query{Hosts: hosts})
			if err != nil {
				t.Fatal(err)
			}
			if k != wk || u != wu || !maps.Equal(d, wd) {
				t.Fatalf("hosts %v: MeTotals %d, %d, %v; want %d, %d, %v", hosts, k, u, d, wk, wu, wd)
			}
		}
	}
	checkTotals()
	bad := wiretest.RandBatch(r, wiretest.Options{Host: "h1", CPU: 0, Seq: 9, Epoch: 2, MaxEntries: 4, Images: images})
	wiretest.AddMe(r, bad, images, 6, 10)
	bad.Me = append(bad.Me, wire.MeEntry{Image: images[0], Offset: 1 << 40, Counts: wire.MeCounts{wire.MeSamples: 1, wire.MeRetired: 1}})
	bad.Version = wire.StackVersion
	if _, err := db.ApplyBatch(bad); err == nil {
		t.Fatal("a version-3 batch carrying ProfileMe samples was applied")
	}
	checkTotals()
}
