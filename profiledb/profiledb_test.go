package profiledb

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"dcpi/coordinator"
	"dcpi/storage"
)

// catalog is a DB that knows only its hosts and epochs; the tests here
// read nothing else.
type catalog struct {
	DB
	hosts  []string
	epochs []uint64
	nodes  []coordinator.NodeInfo
}

// Epochs gives epoch N the hour from N:00 on 2026-11-20 UTC.
func (c catalog) Epochs(context.Context) ([]coordinator.EpochInfo, error) {
	var infos []coordinator.EpochInfo
	for _, n := range c.epochs {
		start := time.Date(2026, 11, 20, int(n%24), 0, 0, 0, time.UTC)
		infos = append(infos, coordinator.EpochInfo{Epoch: storage.Epoch{Number: n, Start: start, End: start.Add(time.Hour), State: storage.EpochSealed}})
	}
	return infos, nil
}

func (c catalog) Hosts(context.Context) ([]string, error)        { return c.hosts, nil }
func (c catalog) EpochNumbers(context.Context) ([]uint64, error) { return c.epochs, nil }
func (c catalog) Where() string                                  { return "this database" }
func (c catalog) Nodes(context.Context) ([]coordinator.NodeInfo, error) {
	return c.nodes, nil
}

// TestSelection: the shared filters become a query, each bad value with
// a one-line error naming its flag.
func TestSelection(t *testing.T) {
	s, err := Filters{Epochs: []string{"7"}, Ranges: []string{"2-4"}, Hosts: []string{"alpha1"}, PIDs: []uint{9},
		Events: []string{"imiss", "cycles"}, Images: []string{"/bin/sort"}}.Selection()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Filter.Epochs, []uint64{7, 2, 3, 4}) || !slices.Equal(s.Filter.Hosts, []string{"alpha1"}) ||
		!slices.Equal(s.Filter.PIDs, []uint32{9}) || !slices.Equal(s.ImagePaths, []string{"/bin/sort"}) || len(s.Events) != 2 {
		t.Errorf("selection %+v", s)
	}
	for _, c := range []struct {
		f    Filters
		want string
	}{
		{Filters{Epochs: []string{"x"}}, `--epoch "x"`},
		{Filters{Ranges: []string{"5-3"}}, "ends before it starts"},
		{Filters{Ranges: []string{"1-99999999"}}, "more than"},
		{Filters{Ranges: []string{"0-1048575", "1-1"}}, "epochs in all"},
		{Filters{Ranges: []string{"a-b"}}, "want A-B"},
		{Filters{Hosts: []string{""}}, "--host: empty"},
		{Filters{PIDs: []uint{1 << 33}}, "out of range"},
		{Filters{Events: []string{"cycles", "cycles"}}, "given twice"},
		{Filters{Events: []string{"nosuch"}}, "--event"},
		{Filters{Images: []string{""}}, "--image: empty"},
		{Filters{Images: []string{"sha256:zz"}}, "--image"},
		{Filters{Images: []string{"sha256:" + strings.Repeat("ab", 32), "/bin/sort"}}, "not both"},
	} {
		if _, err := c.f.Selection(); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line with %q", c.f, err, c.want)
		}
	}
}

// TestSampleSets: one set per host or epoch the database holds, or one
// per --set SPEC over the base selection; one way only.
func TestSampleSets(t *testing.T) {
	ctx := context.Background()
	db := catalog{hosts: []string{"alpha0", "alpha1"}, epochs: []uint64{3, 1, 2}}
	base := storage.Query{Events: []uint8{0}}
	sets, err := SampleSets(ctx, db, base, nil, true, false)
	if err != nil || len(sets) != 2 || sets[1].Name != "host=alpha1" || sets[1].Filter.Hosts[0] != "alpha1" || sets[1].Filter.Events[0] != 0 {
		t.Fatalf("by host: %+v %v", sets, err)
	}
	sets, err = SampleSets(ctx, db, base, nil, false, true)
	if err != nil || len(sets) != 3 || sets[0].Name != "epoch=1" || sets[2].Filter.Epochs[0] != 3 {
		t.Fatalf("by epoch: %+v %v", sets, err)
	}
	sets, err = SampleSets(ctx, db, base, []string{"host=alpha0,epochs=2-3,pid=7", "epoch=1"}, false, false)
	if err != nil || len(sets) != 2 || !slices.Equal(sets[0].Filter.Epochs, []uint64{2, 3}) || !slices.Equal(sets[0].Filter.PIDs, []uint32{7}) ||
		!slices.Equal(sets[1].Filter.Epochs, []uint64{1}) || sets[1].Filter.Hosts != nil {
		t.Fatalf("specs: %+v %v", sets, err)
	}
	for _, c := range []struct {
		specs           []string
		byHost, byEpoch bool
		want            string
	}{
		{nil, false, false, "one way"},
		{[]string{"host=a"}, true, false, "one way"},
		{[]string{"color=red"}, false, false, "unknown key"},
		{[]string{"host"}, false, false, "not KEY=VALUE"},
		{[]string{"pid=x"}, false, false, "process number"},
		{[]string{"label=rack=r1"}, false, false, "no host in this database has labels"},
		{[]string{"label=rack==r1"}, false, false, "bad selector"},
		{[]string{" "}, false, false, "empty"},
		{[]string{"epochs=0-1048575,epoch=7"}, false, false, "epochs in all"},
	} {
		if _, err := SampleSets(ctx, db, base, c.specs, c.byHost, c.byEpoch); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v %v: %v, want %q", c.specs, c.byHost, c.byEpoch, err, c.want)
		}
	}
}

// TestEmptyHint names the hosts and epochs a selection asked for that the
// database does not hold, with the ones it does.
func TestEmptyHint(t *testing.T) {
	db := catalog{hosts: []string{"alpha0", "alpha1"}, epochs: []uint64{1, 2}}
	h := EmptyHint(context.Background(), db, storage.Query{Hosts: []string{"alpha9"}, Epochs: []uint64{2, 5}})
	for _, want := range []string{"no samples for host alpha9; hosts in this database: alpha0, alpha1", "no epoch 5; epochs in this database: 1, 2"} {
		if !strings.Contains(h, want) {
			t.Errorf("hint %q lacks %q", h, want)
		}
	}
	if h := EmptyHint(context.Background(), db, storage.Query{Hosts: []string{"alpha1"}, Epochs: []uint64{1}}); h != "" {
		t.Errorf("everything known, yet %q", h)
	}
}

// TestMeIntervalOf: the ProfileMe interval a local profile recorded is
// the tools' S; a database without one (or a record without ProfileMe)
// gives the default.
func TestMeIntervalOf(t *testing.T) {
	sdb, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	db := NewLocal(sdb)
	defer db.Close()
	if got := MeIntervalOf(db, 4096); got != 4096 {
		t.Errorf("no run record: S = %v, want the default 4096", got)
	}
	if err := sdb.PutRunInfo(storage.RunInfo{Model: "ev5"}); err != nil {
		t.Fatal(err)
	}
	if got := MeIntervalOf(db, 4096); got != 4096 {
		t.Errorf("a run without ProfileMe: S = %v, want the default 4096", got)
	}
	if err := sdb.PutRunInfo(storage.RunInfo{Model: "ev5", MeInterval: 1500}); err != nil {
		t.Fatal(err)
	}
	if got := MeIntervalOf(db, 4096); got != 1500 {
		t.Errorf("a run that recorded S = 1500: S = %v", got)
	}
}
