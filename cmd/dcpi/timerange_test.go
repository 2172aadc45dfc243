package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dcpi/storage"
	"dcpi/wire"
)

// timedDB writes a local database of two epochs with known times: epoch
// 1, 2026-11-20 08:00 to 09:00 UTC, with 100 cycles samples; epoch 2,
// open since 09:00, with 30.
func timedDB(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := func(h int) time.Time { return time.Date(2026, 11, 20, h, 0, 0, 0, time.UTC) }
	k := wire.MustParseImageKey("buildid:0101")
	for i, e := range []storage.Epoch{{Number: 1, Start: at(8), End: at(9), State: storage.EpochSealed}, {Number: 2, Start: at(9), State: storage.EpochOpen}} {
		b := &wire.Batch{Version: wire.Version, Host: "h", Seq: uint64(i + 1), Epoch: e.Number,
			Entries: []wire.Entry{{Image: k, Offset: 0x10, Count: []uint64{100, 30}[i]}}}
		b.Normalize()
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
		if err := db.PutEpoch(e); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTimeRangeTools: over the same two epochs, two ranges give each
// tool different samples, and each says on stderr which epochs and what
// span its range covered; dcpi diff compares the two ranges.
func TestTimeRangeTools(t *testing.T) {
	db := timedDB(t)
	first := []string{"--from", "2026-11-20T08:00:00Z", "--to", "2026-11-20T09:00:00Z"}
	second := []string{"--from", "2026-11-20T09:00:00Z", "--to", "2026-11-20T10:00:00Z"}
	for _, c := range []struct {
		args   []string
		total  uint64
		stderr string
	}{
		{first, 100, "time range 2026-11-20 08:00 to 09:00 UTC: epoch 1, 2026-11-20 08:00 to 09:00 UTC\n"},
		{second, 30, "time range 2026-11-20 09:00 to 10:00 UTC: epoch 2, 2026-11-20 09:00"},
	} {
		out, stderr, err := run(t, append([]string{"totals", "--db", db, "--json"}, c.args...)...)
		var tot struct{ Samples, Unknown uint64 }
		if err == nil {
			err = json.Unmarshal([]byte(out), &tot)
		}
		if err != nil || tot.Samples+tot.Unknown != c.total || !strings.HasPrefix(stderr, c.stderr) {
			t.Errorf("totals %v: %v, %+v, stderr %q; want %d samples and %q", c.args, err, tot, stderr, c.total, c.stderr)
		}
		out, stderr, err = run(t, append([]string{"prof", "--db", db, "--json"}, c.args...)...)
		var prof struct{ Events []struct{ Total uint64 } }
		if err == nil {
			err = json.Unmarshal([]byte(out), &prof)
		}
		if err != nil || len(prof.Events) != 1 || prof.Events[0].Total != c.total || !strings.HasPrefix(stderr, c.stderr) {
			t.Errorf("prof %v: %v, %+v, stderr %q; want %d samples and %q", c.args, err, prof, stderr, c.total, c.stderr)
		}
	}
	out, _, err := run(t, "diff", "--db", db, "--a", "from=2026-11-20T08:00:00Z,to=2026-11-20T09:00:00Z", "--b", "from=2026-11-20T09:00:00Z,to=2026-11-20T10:00:00Z")
	want := "Samples of type cycles: A (from=2026-11-20T08:00:00Z,to=2026-11-20T09:00:00Z [epoch 1, 2026-11-20 08:00 to 09:00 UTC]) = 100, " +
		"B (from=2026-11-20T09:00:00Z,to=2026-11-20T10:00:00Z [epoch 2, 2026-11-20 09:00"
	if err != nil || !strings.HasPrefix(out, want) {
		t.Errorf("diff of two ranges: %v\n%s\nwant it to begin %q", err, out, want)
	}
}
