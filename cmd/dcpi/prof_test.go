package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis/report"
	"dcpi/storage"
	"dcpi/wire"
)

// nodeDB runs dcpi node (two workloads, two CPUs, functional timing) into
// a new database and returns its directory.
func nodeDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "db")
	if _, _, err := run(t, "node", "--workloads", "sort,ccdriver", "--cpus", "2", "--timing=false", "--db", db); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestProfCommandOnNodeDatabase(t *testing.T) {
	db := nodeDB(t)
	out, _, err := run(t, "prof", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	// Without the timing model the machine counts only cycles.
	if !strings.HasPrefix(lines[0], "Total samples for event type cycles = ") {
		t.Fatalf("first line %q", lines[0])
	}
	if len(lines) < 8 || !strings.Contains(lines[4], "procedure") || !strings.HasSuffix(lines[4], "image") {
		t.Fatalf("output:\n%s", out)
	}
	// Both programs and the kernel have named procedures; sort's main
	// loop is hot. Every row's last field is an image path.
	for _, want := range []string{"/bin/sort", "/bin/ccdriver", "/vmunix"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s rows:\n%s", want, out)
		}
	}
	for _, l := range lines[5:] {
		f := strings.Fields(l)
		if img := f[len(f)-1]; !strings.HasPrefix(img, "/") {
			t.Errorf("row %q: image %q", l, img)
		}
	}

	// JSON: the same table, and it adds up to the database's totals.
	js, _, err := run(t, "prof", "--db", db, "--json", "--event", "cycles")
	if err != nil {
		t.Fatal(err)
	}
	var tb report.ProfTable
	if err := json.Unmarshal([]byte(js), &tb); err != nil {
		t.Fatalf("%v:\n%s", err, js)
	}
	sdb, err := storage.Open(db, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	samples, _, _, err := sdb.Totals(storage.Query{Events: []uint8{0}})
	sdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, r := range tb.Rows {
		sum += r.Counts[0]
	}
	if len(tb.Columns) != 1 || tb.Columns[0].Name != "cycles" || tb.Columns[0].Total != samples || sum != samples {
		t.Errorf("JSON columns %+v, rows sum to %d; database holds %d cycles samples", tb.Columns, sum, samples)
	}

	// Filters and modes.
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"--by", "image"}, []string{"/bin/sort", "/vmunix"}, []string{"procedure"}},
		{[]string{"--image", "sort"}, []string{"/bin/sort"}, []string{"/bin/ccdriver", "/vmunix"}},
		{[]string{"--image", "/vmunix", "--event", "imiss", "--event", "cycles"}, []string{"imiss = ", "/vmunix"}, []string{"/bin/"}},
		{[]string{"--limit", "2"}, []string{"more procedures]"}, nil},
		{[]string{"--epoch", "1"}, []string{"cycles"}, nil}, // dcpi node writes epoch 1
		{[]string{"--epochs", "0-1", "--epoch", "7"}, []string{"cycles"}, nil},
		{[]string{"--epochs", "5-9"}, []string{"Total samples: none"}, nil},
		{[]string{"--host", "nosuchhost"}, []string{"Total samples: none"}, nil},
		{[]string{"--pid", "4242"}, []string{"Total samples: none"}, nil},
	} {
		out, _, err := run(t, append([]string{"prof", "--db", db}, tc.args...)...)
		if err != nil {
			t.Errorf("dcpi prof %v: %v", tc.args, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("dcpi prof %v: no %q in\n%s", tc.args, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("dcpi prof %v: %q in\n%s", tc.args, w, out)
			}
		}
	}
}

// TestProfCommandByKey builds a database with storage directly: an image
// selected by content key, and one never uploaded, shown by its key.
func TestProfCommandByKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	k1 := wire.MustParseImageKey("buildid:0101")
	k2 := wire.MustParseImageKey("buildid:0202")
	err = db.PutImage(&wire.ImageRecord{Version: wire.Version, Key: k1, Path: "/bin/app", TextStart: 0x120000000, TextEnd: 0x120001000, Base: 0x120000000,
		Symbols: []wire.Symbol{{Name: "main", Addr: 0x120000000, Size: 0x100}}})
	if err != nil {
		t.Fatal(err)
	}
	b := &wire.Batch{Version: wire.Version, Host: "h", CPU: 0, Seq: 1, Epoch: 3, Entries: []wire.Entry{
		{Image: k1, Offset: 0x10, Event: 0, Count: 30},
		{Image: k1, Offset: 0x800, Event: 0, Count: 5},
		{Image: k2, Offset: 0x10, Event: 0, Count: 1},
	}}
	b.Normalize()
	if _, err := db.ApplyBatch(b); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, _, err := run(t, "prof", "--db", dir, "--image", "buildid:0101", "--epochs", "2-3", "--host", "h")
	if err != nil {
		t.Fatal(err)
	}
	want := `Total samples for event type cycles = 35

The counts given below are the number of samples for each listed event type.
==============================================================================
cycles       %     cum%  procedure    image
    30  85.71%   85.71%  main         /bin/app
     5  14.29%  100.00%  unknown_rtn  /bin/app
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	out, _, err = run(t, "prof", "--db", dir, "--by", "image")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "buildid:0202") {
		t.Errorf("image never uploaded not shown by key:\n%s", out)
	}
}

// TestEmptyResultNamesWhatIsThere: an --image, --event or procedure the
// selection has no samples of is answered with the images, events or
// procedures it does have.
func TestEmptyResultNamesWhatIsThere(t *testing.T) {
	db := nodeDB(t)
	out, _, err := run(t, "prof", "--db", db, "--image", "nosuch")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "images with samples in this database: ") || !strings.Contains(out, "/bin/sort") {
		t.Errorf("--image nosuch:\n%s", out)
	}
	out, _, err = run(t, "prof", "--db", db, "--event", "dmiss")
	if err != nil {
		t.Fatal(err)
	}
	// Without the timing model the machine counts only cycles.
	if !strings.Contains(out, "events with samples in this database: cycles") {
		t.Errorf("--event dmiss:\n%s", out)
	}
	_, _, err = run(t, "list", "--db", db, "nosuchproc")
	if err == nil || !strings.Contains(err.Error(), "procedures with the most samples in the selection: ") {
		t.Errorf("list nosuchproc: %v", err)
	}
	// A selection that matches says nothing more.
	out, _, _ = run(t, "prof", "--db", db, "--image", "sort")
	if strings.Contains(out, "with samples in") {
		t.Errorf("a matching selection got a hint:\n%s", out)
	}
}
