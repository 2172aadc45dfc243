package webdb

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"dcpi/analysis/web"
	"dcpi/profiledb"
	"dcpi/profiledb/timerange"
	"dcpi/storage"
	"dcpi/wire"
)

// TestSelectTimeRange: a page's since, from and to select the epochs
// that overlap them, as the tools' flags do, and the selection carries the
// tools' line; a range that overlaps no epoch is refused with the tools'
// message.
func TestSelectTimeRange(t *testing.T) {
	sdb, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdb.Close() })
	// Epoch 1 ended a day ago; epoch 2 has been open since.
	now := time.Now()
	k := wire.MustParseImageKey("buildid:0101")
	for i, e := range []storage.Epoch{
		{Number: 1, Start: now.Add(-25 * time.Hour), End: now.Add(-24 * time.Hour), State: storage.EpochSealed},
		{Number: 2, Start: now.Add(-24 * time.Hour), State: storage.EpochOpen},
	} {
		b := &wire.Batch{Version: wire.Version, Host: "h", Seq: uint64(i + 1), Epoch: e.Number, Entries: []wire.Entry{{Image: k, Offset: 0x10, Count: 5}}}
		b.Normalize()
		if _, err := sdb.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
		if err := sdb.PutEpoch(e); err != nil {
			t.Fatal(err)
		}
	}
	b := New(profiledb.NewLocal(sdb), nil, nil)
	ctx := context.Background()
	sel, err := b.Select(ctx, web.Filters{Since: "2h"})
	if err != nil || !slices.Equal(sel.Filter.Epochs, []uint64{2}) || sel.Covered == "" {
		t.Errorf("since=2h: %+v, %v; want epoch 2 and the line", sel, err)
	}
	if sel, err := b.Select(ctx, web.Filters{}); err != nil || sel.Filter.Epochs != nil || sel.Covered != "" {
		t.Errorf("no range: %+v, %v", sel, err)
	}
	if _, err := b.Select(ctx, web.Filters{From: "2000-01-01T00:00:00Z", To: "2000-01-02T00:00:00Z"}); !errors.Is(err, timerange.ErrNoEpoch) {
		t.Errorf("a range before every epoch: %v", err)
	}
	if _, err := b.Select(ctx, web.Filters{Since: "-1h"}); !errors.Is(err, timerange.ErrBadRange) {
		t.Errorf("since=-1h: %v", err)
	}
}
