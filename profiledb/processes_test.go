package profiledb

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/storage"
	"dcpi/wire"
)

// procDB is a local database of two hosts whose db images were kept per
// process: alpha0 (service=db) ran /usr/bin/db as PIDs 100 (role=primary,
// 10 samples) and 101 (role=replica, 4), with 60 samples of /bin/app not
// kept per process; alpha1 (service=web) ran /bin/app as PID 100 (30
// samples kept per process) and /bin/idle as 102 (none), with 7 more of
// /bin/app with no process.
func procDB(t *testing.T) *Local {
	t.Helper()
	db, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	app, dbi := wire.MustParseImageKey("buildid:0101"), wire.MustParseImageKey("buildid:0202")
	for _, r := range []*wire.ImageRecord{
		{Version: wire.Version, Key: app, Path: "/bin/app", TextStart: 0x120000000, TextEnd: 0x120001000, Base: 0x120000000,
			Symbols: []wire.Symbol{{Name: "work", Addr: 0x120000000, Size: 0x1000}}},
		{Version: wire.Version, Key: dbi, Path: "/usr/bin/db", TextStart: 0x120000000, TextEnd: 0x120001000, Base: 0x120000000,
			Symbols: []wire.Symbol{{Name: "query", Addr: 0x120000000, Size: 0x1000}}},
	} {
		if err := db.PutImage(r); err != nil {
			t.Fatal(err)
		}
	}
	proc := func(pid uint32, binary string, labels map[string]string) *wire.ProcessRecord {
		return &wire.ProcessRecord{Version: wire.ProcessVersion, PID: pid, Epoch: 1, Binary: binary, Labels: labels}
	}
	for _, h := range []struct {
		host    string
		labels  map[string]string
		entries []wire.Entry
		procs   []*wire.ProcessRecord
	}{
		{"alpha0", map[string]string{"service": "db"},
			[]wire.Entry{{Image: dbi, Offset: 0x20, PID: 100, Count: 10}, {Image: dbi, Offset: 0x20, PID: 101, Count: 4}, {Image: app, Offset: 0x10, Count: 60}},
			[]*wire.ProcessRecord{proc(100, "/usr/bin/db", map[string]string{"role": "primary"}), proc(101, "/usr/bin/db", map[string]string{"role": "replica"})}},
		{"alpha1", map[string]string{"service": "web"},
			[]wire.Entry{{Image: app, Offset: 0x10, PID: 100, Count: 30}, {Image: app, Offset: 0x14, Count: 7}},
			[]*wire.ProcessRecord{proc(100, "/bin/app", nil), proc(102, "/bin/idle", nil)}},
	} {
		if err := db.PutNode(storage.Node{Host: h.host, CPUs: 1, Labels: h.labels}); err != nil {
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

// TestProcessesKnownTotals: process selectors select the samples of the
// matching (host, PID) pairs exactly — a PID on one host is not the same
// PID on another — mixed with host selectors; each says in one line how
// many samples of the selected hosts have no process; a selector that
// matches no process says so naming the binaries and labels there are.
func TestProcessesKnownTotals(t *testing.T) {
	db := procDB(t)
	for _, c := range []struct {
		sel  []string
		pids []uint
		want uint64
		note string
	}{
		{sel: []string{`binary="/usr/bin/db"`}, want: 14, note: "binary= selects samples of images kept per process (node.per_process); 60 samples of other images have no process\n"},
		{sel: []string{`binary="/bin/app"`}, want: 30, note: "binary= selects samples of images kept per process (node.per_process); 7 samples of other images have no process\n"},
		{sel: []string{`binary=~".*/db"`}, want: 14, note: "binary= selects samples of images kept per process (node.per_process); 60 samples of other images have no process\n"},
		{sel: []string{`pid=100`}, want: 40, note: "pid= selects samples of images kept per process (node.per_process); 67 samples of other images have no process\n"},
		{sel: []string{`role=primary`}, want: 10},
		{sel: []string{`service=db`, `role=~".+"`}, want: 14},
		{sel: []string{`{service="web",pid="100"}`}, want: 30},
		{sel: []string{`binary="/usr/bin/db"`}, pids: []uint{101}, want: 4},
		{sel: []string{`service=db`}, want: 74},
	} {
		s, err := Filters{Select: c.sel, PIDs: c.pids}.Selection()
		if err != nil {
			t.Fatal(err)
		}
		var note strings.Builder
		if err := Select(t.Context(), db, &s, &note); err != nil {
			t.Fatalf("%v: %v", c.sel, err)
		}
		r, err := Prof(t.Context(), db, db, s, ProfOptions{By: "image"})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Table.Columns[0].Total; got != c.want {
			t.Errorf("%v: %d samples, want %d", c.sel, got, c.want)
		}
		if note.String() != c.note && !(c.note == "" && strings.Count(note.String(), "\n") <= 1) {
			t.Errorf("%v: said %q, want %q", c.sel, note.String(), c.note)
		}
	}
	for _, c := range []struct {
		sel  []string
		want string
	}{
		{[]string{`binary=/nosuch`}, `binary="/nosuch" selects no process; processes in this database: binary=/bin/app, /bin/idle, /usr/bin/db; role=primary, replica`},
		{[]string{`service=web`, `binary=~".*/db"`}, `binary=~".*/db" selects no process; processes in this database: binary=/bin/app, /bin/idle`},
	} {
		s, _ := Filters{Select: c.sel}.Selection()
		var note strings.Builder
		err := Select(t.Context(), db, &s, &note)
		if !errors.Is(err, ErrNoProcess) || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.sel, err, c.want)
		}
	}
}

// TestProcessGroups: dcpi prof --by binary, pid or a process label
// groups the samples by process, the samples of no process in the group
// of "", so the groups add up to the selection.
func TestProcessGroups(t *testing.T) {
	db := procDB(t)
	for _, c := range []struct {
		sel  []string
		by   string
		want string
	}{
		{nil, "binary", "111: =67(60.36%)[], /bin/app=30(27.03%)[alpha1], /usr/bin/db=14(12.61%)[alpha0]"},
		{nil, "pid", "111: =67(60.36%)[], 100=30(27.03%)[alpha1], 100=10(9.01%)[alpha0], 101=4(3.60%)[alpha0]"},
		{nil, "role", "111: =97(87.39%)[], primary=10(9.01%)[alpha0], replica=4(3.60%)[alpha0]"},
		{[]string{`binary="/usr/bin/db"`}, "role", "14: primary=10(71.43%)[alpha0], replica=4(28.57%)[alpha0]"},
		{nil, "service", "111: db=74(66.67%)[alpha0], web=37(33.33%)[alpha1]"},
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
			parts = append(parts, fmt.Sprintf("%s=%d(%.2f%%)[%s]", row.Value, row.Counts[0], row.Percent[0], strings.Join(row.Hosts, " ")))
		}
		if got := fmt.Sprintf("%d: %s", r.Groups.Columns[0].Total, strings.Join(parts, ", ")); got != c.want {
			t.Errorf("%v --by %s: %s, want %s", c.sel, c.by, got, c.want)
		}
	}
}
