package simhost

import (
	"reflect"
	"testing"
	"time"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/storage"
)

func TestEventsPerSample(t *testing.T) {
	ev := func(e alpha.Event) uint8 { return uint8(e) }
	twice := hwsim.DefaultProfile()
	twice.Counters = append(twice.Counters, hwsim.CounterSpec{Events: []alpha.Event{alpha.EvIMiss}, PeriodMin: 12288, PeriodMax: 12288})
	for _, tc := range []struct {
		name string
		p    hwsim.ProfileConfig
		want map[uint8]uint64
	}{
		// cycles: the mean of 60K-64K; imiss: of 3840-4352.
		{"default", hwsim.DefaultProfile(), map[uint8]uint64{ev(alpha.EvCycles): 63488, ev(alpha.EvIMiss): 4096}},
		// Four events take turns on the second counter: each is counted
		// a quarter of the time, so a sample stands for 4 x 4096.
		{"mux", hwsim.MuxProfile(), map[uint8]uint64{ev(alpha.EvCycles): 63488,
			ev(alpha.EvIMiss): 16384, ev(alpha.EvDMiss): 16384, ev(alpha.EvBranchMP): 16384, ev(alpha.EvDTBMiss): 16384}},
		// imiss on two counters, every 4096 and every 12288: samples at
		// 1/4096 + 1/12288 = 1/3072 per event.
		{"two counters", twice, map[uint8]uint64{ev(alpha.EvCycles): 63488, ev(alpha.EvIMiss): 3072}},
		{"none", hwsim.ProfileConfig{}, map[uint8]uint64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EventsPerSample(tc.p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("EventsPerSample = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLocalSinkRegister: a local database's node record carries the
// host's events per sample; registering again (another configuration)
// replaces them and keeps the first registration time.
func TestLocalSinkRegister(t *testing.T) {
	db, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sink := LocalSink{DB: db}
	t1 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	if err := sink.Register("alpha1", 2, nil, hwsim.MuxProfile(), t1); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Node("alpha1"); err != nil || n.CPUs != 2 || n.Periods[uint8(alpha.EvDMiss)] != 16384 || !n.Registered.Equal(t1) {
		t.Fatalf("after the mux run: %+v %v", n, err)
	}
	if err := sink.Register("alpha1", 2, nil, hwsim.DefaultProfile(), t2); err != nil {
		t.Fatal(err)
	}
	n, err := db.Node("alpha1")
	want := EventsPerSample(hwsim.DefaultProfile())
	if err != nil || !reflect.DeepEqual(n.Periods, want) || !n.Registered.Equal(t1) || !n.Updated.Equal(t2) {
		t.Fatalf("after the default run: %+v %v; want periods %v, registered %v, updated %v", n, err, want, t1, t2)
	}
}
