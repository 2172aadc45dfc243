package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/storage"
	"dcpi/wire"
)

// TestPprofCommandTotals exports a dcpi node database and checks, with the
// pprof package, that every event's total is the database's, exactly, and
// that the mappings carry the images' paths and build IDs.
func TestPprofCommandTotals(t *testing.T) {
	db := nodeDB(t)
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	summary, _, err := run(t, "pprof", "--db", db, "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(summary, "wrote "+out+": cycles = ") {
		t.Errorf("summary %q", summary)
	}
	p := readProfile(t, out)
	sdb, err := storage.Open(db, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// Each event is two sample types: its estimated count (samples x its
	// mean period, 63488 for cycles), then its samples.
	if len(p.SampleType) != 2 || p.Period != 63488 || p.PeriodType.Type != "cycles" {
		t.Fatalf("sample types %v, period %d %v", p.SampleType, p.Period, p.PeriodType)
	}
	for i := 1; i < len(p.SampleType); i += 2 {
		st := p.SampleType[i]
		ev, err := analysis.ParseEvent(strings.TrimSuffix(st.Type, "_samples"))
		if err != nil || !strings.HasSuffix(st.Type, "_samples") || p.SampleType[i-1].Type != analysis.EventName(ev) {
			t.Fatalf("sample types %+v %+v: %v", p.SampleType[i-1], st, err)
		}
		want, _, _, err := sdb.Totals(storage.Query{Events: []uint8{ev}})
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for _, s := range p.Sample {
			got += s.Value[i]
			if s.Value[i-1] != s.Value[i]*p.Period {
				t.Fatalf("sample %v: estimate is not samples x %d", s.Value, p.Period)
			}
		}
		if uint64(got) != want {
			t.Errorf("%s: profile holds %d samples, database %d", st.Type, got, want)
		}
	}
	sdb.Close()
	files := map[string]bool{}
	for _, m := range p.Mapping {
		files[m.File] = true
		if len(m.BuildID) != 40 {
			t.Errorf("mapping %s: build ID %q", m.File, m.BuildID)
		}
	}
	for _, f := range []string{"/bin/sort", "/bin/ccdriver", "/vmunix"} {
		if !files[f] {
			t.Errorf("no mapping for %s", f)
		}
	}

	// Labels: one host and one epoch in a dcpi node database.
	out2 := filepath.Join(t.TempDir(), "tagged.pb.gz")
	if _, _, err := run(t, "pprof", "--db", db, "--by-host", "--epochs", "1-1", "--by-epoch", "-o", out2, "--json"); err != nil {
		t.Fatal(err)
	}
	for _, s := range readProfile(t, out2).Sample {
		if s.Label["host"][0] != "alpha0" || s.NumLabel["epoch"][0] != 1 {
			t.Fatalf("sample labels %v %v", s.Label, s.NumLabel)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--by-epoch"}, "lists no epochs"},
		{[]string{"-o", ""}, "--output"},
		{[]string{"--event", "bogus"}, `unknown event "bogus"`},
		{[]string{"-o", filepath.Join(t.TempDir(), "no", "such", "dir")}, "--output"},
	} {
		_, _, err := run(t, append([]string{"pprof", "--db", db}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dcpi pprof %v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

func readProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPprofTopMatchesProf runs go tool pprof -top -noinlines on an export
// and checks that its top function is dcpi prof's first row.
func TestPprofTopMatchesProf(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	db := nodeDB(t)
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	if _, _, err := run(t, "pprof", "--db", db, "-o", out); err != nil {
		t.Fatal(err)
	}
	// -noinlines: dcpi prof counts an inlined procedure's instructions in
	// the procedure they were compiled into, as pprof does without the
	// inlined frames the export gives from DWARF.
	top, err := exec.Command(goTool, "tool", "pprof", "-top", "-noinlines", out).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, top)
	}
	js, _, err := run(t, "prof", "--db", db, "--limit", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var tb analysis.ProfTable
	if err := json.Unmarshal([]byte(js), &tb); err != nil {
		t.Fatal(err)
	}
	want := tb.Rows[0].Procedure
	var got string
	sc := bufio.NewScanner(strings.NewReader(string(top)))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "flat%") && sc.Scan() {
			ff := strings.Fields(sc.Text())
			got = ff[len(ff)-1]
			break
		}
	}
	if got != want {
		t.Errorf("pprof -top's first function %q, dcpi prof's first procedure %q\n%s", got, want, top)
	}
}

// setsDB builds a database with storage directly: /bin/app on two hosts in
// two epochs, where work's share grows in epoch 2 on host b.
func setsDB(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	k := wire.MustParseImageKey("buildid:0101")
	err = db.PutImage(&wire.ImageRecord{Version: wire.Version, Key: k, Path: "/bin/app", TextStart: 0x120000000, TextEnd: 0x120001000, Base: 0x120000000,
		Symbols: []wire.Symbol{{Name: "main", Addr: 0x120000000, Size: 0x100}, {Name: "work", Addr: 0x120000100, Size: 0x100}}})
	if err != nil {
		t.Fatal(err)
	}
	seq := map[string]uint64{}
	put := func(host string, epoch uint64, main, work uint64) {
		seq[host]++
		b := &wire.Batch{Version: wire.Version, Host: host, CPU: 0, Seq: seq[host], Epoch: epoch, Entries: []wire.Entry{
			{Image: k, Offset: 0x10, Event: 0, Count: main},
			{Image: k, Offset: 0x110, Event: 0, Count: work},
		}}
		b.Normalize()
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	put("a", 1, 1000, 1000)
	put("b", 1, 1010, 990)
	put("a", 2, 1000, 1020)
	put("b", 2, 500, 1500)
	for _, e := range []uint64{1, 2} {
		if err := db.PutEpoch(storage.Epoch{Number: e, State: storage.EpochSealed}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	return dir
}
