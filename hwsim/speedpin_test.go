package hwsim_test

import (
	"flag"
	"fmt"
	"hash"
	"hash/fnv"
	"slices"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

var printPins = flag.Bool("print-pins", false, "TestRunLoopPins: print the digests instead of checking them")

// runPin is one pinned run: a workload on one CPU of one model (timed or
// functional), with ground truth and value truth, and optionally with
// CYCLES and event counters sampled and with ProfileMe on.
type runPin struct {
	name      string
	args      []string
	model     alpha.Model
	timing    bool
	counters  bool
	profileMe bool
	want      string
}

// TestRunLoopPins pins what the interpreter's run loop must leave exactly
// as it was whichever of its specialized forms runs (exec.go): for each
// model (functional, the 21164's issue model, the 21264's core) and a mix
// of workloads, the digest of the ground truth and value truth by PC, of
// the counter sample stream (CPU, PID, PC, event, cycle, in delivery
// order), of the ProfileMe record stream, and each CPU's cycles and
// instructions. A change to the timing models changes these figures:
// check that it is meant, then update them (go test -run
// TestRunLoopPins -print-pins ./hwsim).
func TestRunLoopPins(t *testing.T) {
	ev5, ev6 := alpha.EV5, alpha.EV6
	pins := []runPin{
		{"matmul", []string{"40"}, ev5, false, false, false, "cbf29ce484222325 cbf29ce484222325 cbf29ce484222325 cbf29ce484222325 cpu0 2381865+15894+2241+0/2397786"},
		{"matmul", []string{"40"}, ev5, false, true, false, "cbf29ce484222325 cbf29ce484222325 fa3faf901faaf4e6 cbf29ce484222325 cpu0 2381865+15999+13806+268330/2397889"},
		{"matmul", []string{"40"}, ev5, false, true, true, "cbf29ce484222325 cbf29ce484222325 9a7a63a67003f1f4 f70eae6f3e13f5bd cpu0 2381865+16104+7602+614429/2397992"},
		{"matmul", []string{"40"}, ev5, true, false, false, "6c7589413108c319 46f10cf15864acac cbf29ce484222325 cbf29ce484222325 cpu0 3313244+17332+9424+0/2398116"},
		{"matmul", []string{"40"}, ev5, true, true, true, "31de871a9b085db7 440b3f22f3e41bf7 8cf0882da9cf637d 647eac1a31aefb6d cpu0 3301587+17282+4789+956342/2398425"},
		{"matmul", []string{"40"}, ev6, true, false, false, "ebb4efb98b97312a cbf29ce484222325 cbf29ce484222325 cbf29ce484222325 cpu0 1719785+9386+10829+0/2397580"},
		{"matmul", []string{"40"}, ev6, true, true, true, "9b2ac1ceeeaa71da cbf29ce484222325 404b679153356d79 e1541ab936ea871b cpu0 1420532+6597+10220+522651/2397693"},
		{"sort", []string{"4000"}, ev5, false, true, false, "cbf29ce484222325 cbf29ce484222325 62737eba43d1537a cbf29ce484222325 cpu0 3614847+25895+12237+407021/3640743"},
		{"sort", []string{"4000"}, ev5, true, false, true, "f0b30694647875c4 8e4143e02ed81a53 cbf29ce484222325 d14a4267fb63fef5 cpu0 3547856+23346+16797+152001/3640640"},
		{"sort", []string{"4000"}, ev5, true, true, false, "749aa5298f3d2d55 ee069a62b482e526 8393a36df415d241 cbf29ce484222325 cpu0 3538365+23024+7775+550836/3640743"},
		{"sort", []string{"4000"}, ev6, true, true, false, "49f5e2bc44031739 cbf29ce484222325 63f0868aa1cd8d42 cbf29ce484222325 cpu0 2243070+12960+6984+256986/3640207"},
		{"hashdb", []string{"3000", "15000"}, ev5, false, false, false, "cbf29ce484222325 cbf29ce484222325 cbf29ce484222325 cbf29ce484222325 cpu0 3733004+54408+12588+0/3787367"},
		{"hashdb", []string{"3000", "15000"}, ev5, true, true, true, "cfdb309ff3f1892b 7b4ed614013f9a99 8d2855dae4bdf544 98a783b91a5f09c4 cpu0 6188158+46977+6910+1957955/3788830"},
		{"hashdb", []string{"3000", "15000"}, ev6, true, false, true, "5283f503aa9cdafe cbf29ce484222325 cbf29ce484222325 a2effec08343ff67 cpu0 2818890+20875+9535+230700/3787140"},
		{"ccdriver", []string{"1"}, ev5, false, true, false, "cbf29ce484222325 cbf29ce484222325 37ca1652be7a18f9 cbf29ce484222325 cpu0 2796733+62329+2354+318584/2858847"},
		{"ccdriver", []string{"1"}, ev5, true, true, false, "a7645156e71b7f64 d850907b68c24d4a 6209e6d62255ed11 cbf29ce484222325 cpu0 3616374+55968+14380+513278/2859156"},
		{"ccdriver", []string{"1"}, ev6, true, true, true, "49660a881087fda0 cbf29ce484222325 2aeb2d3308b89b37 c8e91d3eeba3daf0 cpu0 1554410+20951+10643+973996/2858641"},
		{"missloop", []string{"1024", "2000"}, ev5, true, true, true, "34f23a1cd26a98d0 189363bf01ed60f3 2710ed2fb7eaa17b a2d7282c3d2a076c cpu0 360238+18715+9726+131579/464427"},
		{"missloop", []string{"1024", "2000"}, ev6, true, true, false, "1ebc986ea6136f8f cbf29ce484222325 8a43a456417315fb cbf29ce484222325 cpu0 170440+10030+13419+26388/464324"},
	}
	for _, p := range pins {
		t.Run(fmt.Sprintf("%s/%s/timing=%v/counters=%v/me=%v", p.name, p.model.Name, p.timing, p.counters, p.profileMe), func(t *testing.T) {
			t.Parallel()
			got := pinRun(t, p)
			if *printPins {
				t.Logf("pin %s %q", t.Name(), got)
				return
			}
			if got != p.want {
				t.Errorf("got  %s\nwant %s", got, p.want)
			}
		})
	}
}

// pinRun runs p and returns its digests.
func pinRun(t *testing.T, p runPin) string {
	t.Helper()
	cfg := machineWithWorkloads(t, 1)
	cfg.Model, cfg.Timing, cfg.GroundTruth = p.model, p.timing, true
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	samples := fnv.New64a()
	if p.counters {
		prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
			{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: 2800, PeriodMax: 3200},
			{Events: []alpha.Event{alpha.EvDMiss}, PeriodMin: 50, PeriodMax: 70}}, InterruptCycles: 214}
		if err := m.StartProfiling(prof, pinCollector{samples}); err != nil {
			t.Fatal(err)
		}
	}
	me := fnv.New64a()
	if p.profileMe {
		c := hwsim.ProfileMeConfig{IntervalMin: 500, IntervalMax: 700, Copies: 4}
		if err := m.StartProfileMe(c, pinMeCollector{me}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Spawn("/bin/"+p.name, append([]string{"/bin/" + p.name}, p.args...), []string{"PATH=/bin"}); err != nil {
		t.Fatal(err)
	}
	if m.Run(200_000_000_000) {
		t.Fatalf("%s did not finish", p.name)
	}
	if p.profileMe {
		m.FlushProfileMe()
	}
	s := fmt.Sprintf("%016x %016x %016x %016x", truthDigest(m), valueDigest(m), samples.Sum64(), me.Sum64())
	for i, st := range m.CPUStats() {
		s += fmt.Sprintf(" cpu%d %d+%d+%d+%d/%d", i, st.User, st.Kernel, st.Idle, st.Profiling, st.Retired)
	}
	return s
}

type pinCollector struct{ h hash.Hash64 }

func (c pinCollector) CounterInterrupt(s hwsim.Sample) uint64 {
	fmt.Fprintf(c.h, "%d %d %d %x %d %v %d\n", s.CPU, s.PID, s.Incarnation, s.PC, s.Event, s.Kernel, s.Cycle)
	return 120
}

type pinMeCollector struct{ h hash.Hash64 }

func (c pinMeCollector) ProfileMeInterrupt(cpu int, s []hwsim.MeSample, lost uint64) uint64 {
	for _, r := range s {
		fmt.Fprintf(c.h, "%d %d %d %+v\n", r.CPU, r.PID, r.Incarnation, r.MeRecord)
	}
	fmt.Fprintf(c.h, "lost %d\n", lost)
	return 100
}

// truthDigest hashes the ground truth of every image: per PC, in order,
// its counts, and the edges and register waits.
func truthDigest(m *hwsim.Machine) uint64 {
	h := fnv.New64a()
	truth := m.GroundTruth()
	for _, p := range sortedKeys(truth) {
		g := truth[p]
		for _, pc := range sortedKeys(g.PCs) {
			fmt.Fprintf(h, "%s %x %v\n", p, pc, *g.PCs[pc])
		}
		fmt.Fprintf(h, "%v %v\n", g.Edges, g.RegWaits)
	}
	return h.Sum64()
}

// valueDigest hashes value sampling's ground truth the same way.
func valueDigest(m *hwsim.Machine) uint64 {
	h := fnv.New64a()
	values := m.ValueTruth()
	for _, p := range sortedKeys(values) {
		v := values[p]
		for _, pc := range sortedKeys(v.PCs) {
			fmt.Fprintf(h, "%s %x %+v\n", p, pc, *v.PCs[pc])
		}
	}
	return h.Sum64()
}

func sortedKeys[K interface{ ~string | ~uint64 }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
