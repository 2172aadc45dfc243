package analysis_test

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/internal/testrand"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// The fixture's images: rec is image i's record, its text 0x210 into the
// page at base (as the workloads' is), with syms.
var testKey = wiretest.Key

const base = 0x120000000

func rec(i int, path string, textEnd uint64, syms ...wire.Symbol) *wire.ImageRecord {
	return &wire.ImageRecord{Version: wire.Version, Key: testKey(i), Path: path,
		TextStart: base + 0x210, TextEnd: textEnd, Base: base, Symbols: syms}
}

func sym(name string, addr, size uint64) wire.Symbol {
	return wire.Symbol{Name: name, Addr: addr, Size: size}
}

type profRow struct {
	image  wire.ImageKey
	offset uint64
	event  uint8
	host   string
	count  uint64
}

func readAll(t *testing.T, src analysis.Source, q storage.Query) []profRow {
	t.Helper()
	var out []profRow
	err := src.Profile(t.Context(), q, func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error {
		out = append(out, profRow{image, offset, event, host, count})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMemSourceMatchesStorage applies random batches to a real database and
// the same counts to a MemSource, then compares Profile and Prof under
// random queries: the twin must answer as the database does.
func TestMemSourceMatchesStorage(t *testing.T) {
	r := testrand.New(t)
	db, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mem := analysis.NewMemSource()
	hosts := []string{"a", "ab", "b"}
	for i := range 4 {
		ir := rec(i, fmt.Sprintf("/bin/p%d", i), base+0x400, sym("f", base+0x210, 0x40), sym("g", base+0x300, 0))
		if err := db.PutImage(ir); err != nil {
			t.Fatal(err)
		}
		mem.PutImage(ir)
	}
	seq := map[[2]any]uint64{}
	for range 60 {
		host, cpu := hosts[r.IntN(len(hosts))], uint16(r.IntN(2))
		seq[[2]any{host, cpu}]++
		b := wiretest.RandBatch(r, wiretest.Options{Host: host, CPU: cpu, Seq: seq[[2]any{host, cpu}], Epoch: uint64(r.IntN(3)),
			MaxEntries: 19, Images: wiretest.Keys(5), Offsets: 0x120, MaxCount: 9})
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
		for _, e := range b.Entries {
			mem.Add(storage.Record{Epoch: b.Epoch, Event: e.Event, Image: e.Image, Offset: e.Offset, Host: b.Host, PID: e.PID, Count: e.Count})
		}
	}
	pick := func(n int) []int {
		if r.IntN(2) == 0 {
			return nil
		}
		out := []int{}
		for i := range n {
			if r.IntN(2) == 0 {
				out = append(out, i)
			}
		}
		return out
	}
	for i := range 200 {
		var q storage.Query
		if s := pick(3); s != nil {
			q.Epochs = []uint64{}
			for _, v := range s {
				q.Epochs = append(q.Epochs, uint64(v))
			}
		}
		if s := pick(3); s != nil {
			q.Events = []uint8{}
			for _, v := range s {
				q.Events = append(q.Events, uint8(v))
			}
		}
		if s := pick(len(hosts)); s != nil {
			q.Hosts = []string{}
			for _, v := range s {
				q.Hosts = append(q.Hosts, hosts[v])
			}
		}
		if s := pick(5); s != nil {
			q.Images = []wire.ImageKey{}
			for _, v := range s {
				q.Images = append(q.Images, testKey(v))
			}
		}
		if s := pick(3); s != nil {
			q.PIDs = []uint32{}
			for _, v := range s {
				q.PIDs = append(q.PIDs, uint32(v))
			}
		}
		want, got := readAll(t, db, q), readAll(t, mem, q)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("query %d %+v:\nstorage %v\nmem     %v", i, q, want, got)
		}
		pq := report.ProfQuery{Filter: q, By: report.By(r.IntN(2)), Limit: r.IntN(4)}
		tw, err1 := report.Prof(t.Context(), db, pq)
		tg, err2 := report.Prof(t.Context(), mem, pq)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !reflect.DeepEqual(tw, tg) {
			t.Fatalf("Prof %+v:\nstorage %+v\nmem     %+v", pq, tw, tg)
		}
	}
}
