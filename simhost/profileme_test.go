package simhost

import (
	"testing"

	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/wire"
)

// runProfileMe runs a workload mix on two CPUs with ProfileMe on and
// returns the host and what it published.
func runProfileMe(t *testing.T, me node.MeConfig, hw hwsim.ProfileMeConfig, limit uint64) (*Host, *node.MemPublisher) {
	t.Helper()
	names := []string{"ccdriver", "sort", "interp"}
	m := workloadMachine(t, 2, true, names...)
	ncfg := DefaultConfig()
	ncfg.Node.Driver.Me = me
	ncfg.ProfileMe = hw
	ncfg.FlushEvery = 2_000_000
	h, pub := runWorkloads(t, m, ncfg, limit, names...)
	return h, pub
}

// meBooks sums the ProfileMe view of the batches: samples in entries,
// unknown, and each drop counter; it checks each batch's version and
// that every entry's image has a record.
func meBooks(t *testing.T, pub *node.MemPublisher) (entries, unknown uint64, drops map[string]uint64) {
	t.Helper()
	drops = map[string]uint64{}
	images := pub.Images()
	for _, b := range pub.Batches() {
		has := len(b.Me) > 0 || b.MeUnknown > 0 || len(b.MeDrops) > 0
		if has != (b.Version == wire.MeVersion) {
			t.Fatalf("batch seq %d of version %d, ProfileMe samples %v", b.Seq, b.Version, has)
		}
		for i := range b.Me {
			entries += b.Me[i].Counts[wire.MeSamples]
			if images[b.Me[i].Image] == nil {
				t.Fatalf("ProfileMe entry in image %v with no image record", b.Me[i].Image)
			}
		}
		unknown += b.MeUnknown
		for name, n := range b.MeDrops {
			drops[name] += n
		}
	}
	return entries, unknown, drops
}

// TestProfileMeConservation: every instruction the ProfileMe hardware
// tagged is in exactly one published ProfileMe entry, in MeUnknown, or in
// a named drop counter — with tables small enough to evict and buffers
// small enough to drop, and again with the hardware sampling so often
// that its register copies fill and it loses records. The counter
// profile's own conservation is unchanged beside it.
func TestProfileMeConservation(t *testing.T) {
	skipUnderRace(t)
	for _, tc := range []struct {
		name     string
		me       node.MeConfig
		hw       hwsim.ProfileMeConfig
		wantDrop string
	}{
		{"driver drops", node.MeConfig{Entries: 8, BufferEntries: 2}, hwsim.ProfileMeConfig{IntervalMin: 40, IntervalMax: 60, Copies: 4}, wire.DropMeOverflowFull},
		{"hardware losses", node.DefaultMeConfig(), hwsim.ProfileMeConfig{IntervalMin: 1, IntervalMax: 3, Copies: 2}, wire.DropMeHardwareFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, pub := runProfileMe(t, tc.me, tc.hw, 30_000_000)
			tagged := h.MeTagged()
			entries, unknown, drops := meBooks(t, pub)
			var dropped uint64
			for _, n := range drops {
				dropped += n
			}
			t.Logf("tagged %d = %d in entries + %d unknown + drops %v", tagged, entries, unknown, drops)
			if tagged == 0 || entries == 0 {
				t.Fatalf("tagged %d, in entries %d: ProfileMe collected nothing", tagged, entries)
			}
			if entries+unknown+dropped != tagged {
				t.Fatalf("tagged %d != %d in entries + %d unknown + %d dropped %v", tagged, entries, unknown, dropped, drops)
			}
			if drops[tc.wantDrop] == 0 {
				t.Errorf("no %s drops: the test no longer exercises them", tc.wantDrop)
			}
			ds, drv := h.Node().Stats()
			var st node.DriverStats
			for _, d := range drv {
				st.Add(d)
			}
			if ds.MeSamples != entries+unknown || st.MeSamples+st.MeLost != tagged {
				t.Errorf("daemon counted %d samples, driver %d + %d lost; want %d, %d", ds.MeSamples, st.MeSamples, st.MeLost, entries+unknown, tagged)
			}
			var flat, flatDrops uint64
			for _, b := range pub.Batches() {
				flat += b.Total()
				for _, d := range b.Drops {
					flatDrops += d
				}
			}
			if flat+flatDrops != h.Generated() {
				t.Errorf("counter samples %d + %d dropped != %d delivered", flat, flatDrops, h.Generated())
			}
		})
	}
}
