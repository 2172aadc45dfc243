package profiledb

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/storage"
	"dcpi/wire"
)

// threadDB is a local database of a per-thread host, alpha2, which ran
// /bin/mt as PID 200 with threads 200 (its first, 5 samples), 201 (7)
// and 202 (9), kept per thread, and 3 samples of vmunix with no process;
// and of alpha3, not per-thread, which ran /bin/mt as PID 201 (4 samples).
func threadDB(t *testing.T) *Local {
	t.Helper()
	db, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mt := wire.MustParseImageKey("buildid:0303")
	if err := db.PutImage(&wire.ImageRecord{Version: wire.Version, Key: mt, Path: "/bin/mt", TextStart: 0x120000000,
		TextEnd: 0x120001000, Base: 0x120000000, Symbols: []wire.Symbol{{Name: "work", Addr: 0x120000000, Size: 0x1000}}}); err != nil {
		t.Fatal(err)
	}
	thread := func(tid uint32) *wire.ProcessRecord {
		return &wire.ProcessRecord{Version: wire.ProcessThreadVersion, PID: tid, Process: 200, Epoch: 1, Binary: "/bin/mt"}
	}
	for _, h := range []struct {
		host    string
		entries []wire.Entry
		procs   []*wire.ProcessRecord
	}{
		{"alpha2", []wire.Entry{{Image: mt, Offset: 0x20, PID: 200, Count: 5}, {Image: mt, Offset: 0x20, PID: 201, Count: 7},
			{Image: mt, Offset: 0x24, PID: 202, Count: 9}, {Image: mt, Offset: 0x28, Count: 3}},
			[]*wire.ProcessRecord{thread(200), thread(201), thread(202)}},
		{"alpha3", []wire.Entry{{Image: mt, Offset: 0x20, PID: 201, Count: 4}},
			[]*wire.ProcessRecord{{Version: wire.ProcessVersion, PID: 201, Epoch: 1, Binary: "/bin/mt"}}},
	} {
		if err := db.PutNode(storage.Node{Host: h.host, CPUs: 1}); err != nil {
			t.Fatal(err)
		}
		b := &wire.Batch{Version: wire.FlatVersion, Host: h.host, Seq: 1, Epoch: 1, Entries: h.entries}
		b.Normalize()
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
		var m storage.Meta
		for _, r := range h.procs {
			if err := m.PutProcess(h.host, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.CommitMeta(&m); err != nil {
			t.Fatal(err)
		}
	}
	return NewLocal(db)
}

// TestThreadGroups: on a per-thread host, --by thread (or tid) has a
// group per thread, --by pid folds the threads into their process, and
// pid= and tid= select a process's threads and one thread; a host that
// is not per-thread has no tid, its samples in the group of "".
func TestThreadGroups(t *testing.T) {
	db := threadDB(t)
	for _, c := range []struct {
		sel  []string
		by   string
		want string
	}{
		{nil, "thread", "28: 202=9[alpha2], =7[], 201=7[alpha2], 200=5[alpha2]"},
		{nil, "tid", "28: 202=9[alpha2], =7[], 201=7[alpha2], 200=5[alpha2]"},
		{nil, "pid", "28: 200=21[alpha2], 201=4[alpha3], =3[]"},
		{[]string{`pid=200`}, "thread", "21: 202=9[alpha2], 201=7[alpha2], 200=5[alpha2]"},
		{[]string{`tid=201`}, "pid", "7: 200=7[alpha2]"},
		{[]string{`binary="/bin/mt"`}, "binary", "25: /bin/mt=25[alpha2 alpha3]"},
	} {
		s, err := Filters{Select: c.sel}.Selection()
		if err != nil {
			t.Fatal(err)
		}
		if err := Select(t.Context(), db, &s, &strings.Builder{}); err != nil {
			t.Fatal(err)
		}
		r, err := Prof(t.Context(), db, db, s, ProfOptions{By: c.by})
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, row := range r.Groups.Rows {
			parts = append(parts, fmt.Sprintf("%s=%d[%s]", row.Value, row.Counts[0], strings.Join(row.Hosts, " ")))
		}
		if got := fmt.Sprintf("%d: %s", r.Groups.Columns[0].Total, strings.Join(parts, ", ")); got != c.want {
			t.Errorf("%v --by %s: %s, want %s", c.sel, c.by, got, c.want)
		}
	}
}
