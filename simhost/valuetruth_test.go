package simhost

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"testing"

	"dcpi/analysis/values"
	"dcpi/analysis/values/valuetest"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/internal/hotlist"
	"dcpi/internal/longtest"
	"dcpi/internal/racedetect"
	"dcpi/node"
	"dcpi/node/valuemod"
	"dcpi/wire"
)

// valueSite names one hot list fleet-wide: an image, an address and a
// value type.
type valueSite struct {
	path string
	pc   uint64
	kind valuemod.Kind
}

// valueFleet is what value sampling measured on a few hosts, merged
// fleet-wide by the unbiased rule, beside hwsim's value truth summed over
// the same hosts.
type valueFleet struct {
	lists  map[valueSite]hotlist.List
	truth  map[string]*alpha.ValueTruth // by image path
	pcs    map[string]*alpha.GroundTruth
	cycles map[valueSite]uint64 // CYCLES samples, by (path, pc); kind 0
}

// valueHosts is how many hosts the accuracy checks run: one in CI, two,
// merged fleet-wide by the unbiased rule, with DCPI_LONG=1 (one host's
// lists are already merged across its records and CPUs by that rule).
func valueHosts() int {
	if longtest.Enabled() {
		return 2
	}
	return 1
}

// runValueFleet runs names with value sampling by module on hosts hosts
// (seeds 1...) with ground truth.
func runValueFleet(t *testing.T, module string, hosts int, names ...string) *valueFleet {
	t.Helper()
	f := &valueFleet{lists: map[valueSite]hotlist.List{}, truth: map[string]*alpha.ValueTruth{},
		pcs: map[string]*alpha.GroundTruth{}, cycles: map[valueSite]uint64{}}
	want := map[string]bool{}
	for _, n := range names {
		want["/bin/"+n] = true
	}
	coins := hotlist.NewCoin(7)
	for seed := uint64(1); seed <= uint64(hosts); seed++ {
		m, _, pub := valuesHostSeed(t, module, seed, true, names...)
		images := map[wire.ImageKey]string{}
		for k, r := range pub.Images() {
			images[k] = r.Path
		}
		for _, r := range pub.Values() {
			for _, l := range r.Lists {
				path := images[l.Image]
				if !want[path] {
					continue
				}
				k := valueSite{path, 0x120000000 + l.Offset, valuemod.Kind(l.Kind)}
				have := f.lists[k]
				f.lists[k] = hotlist.Merge(&have, &l.List, coins)
			}
		}
		for _, b := range pub.Batches() {
			for _, e := range b.Entries {
				if path := images[e.Image]; want[path] && e.Event == uint8(alpha.EvCycles) {
					f.cycles[valueSite{path, 0x120000000 + e.Offset, 0}] += e.Count
				}
			}
		}
		for path, v := range m.ValueTruth() {
			if !want[path] {
				continue
			}
			if f.truth[path] == nil {
				f.truth[path], f.pcs[path] = alpha.NewValueTruth(), alpha.NewGroundTruth()
			}
			f.truth[path].Add(v)
			f.pcs[path].Add(m.GroundTruth()[path])
		}
	}
	return f
}

// histogram returns the truth's histogram of k's value type, nil if none.
func (f *valueFleet) histogram(k valueSite) *alpha.Histogram {
	pv := f.truth[k.path].PCs[k.pc]
	if pv == nil {
		return nil
	}
	switch k.kind {
	case valuemod.KindResult:
		return &pv.Result
	case valuemod.KindOperandA:
		return &pv.OperandA
	case valuemod.KindOperandB:
		return &pv.OperandB
	}
	return nil
}

// TestFrequentValuesMatchGroundTruth holds regvals' frequent values to
// hwsim's value truth: on a host running ptrchase and hashdb (two with
// DCPI_LONG=1), every
// value a fleet-wide result hot list keeps, at an instruction with at
// least 300 samples, has an estimated share τ·c/N of the samples within
// 4 of its stated standard deviations plus 0.04 (the sampling's bias:
// runs start after interrupts, which land on stalled instructions) of its
// true share of the executions — for every value the truth counts exactly
// (the truth keeps the first alpha.TruthValues distinct values of each
// instruction; values after those are left out, and counted).
func TestFrequentValuesMatchGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs timed hosts with ground truth")
	}
	if racedetect.Enabled {
		t.Skip("checks the simulator's numbers, single-threaded; the race run is for the concurrent parts")
	}
	f := runValueFleet(t, "regvals", valueHosts(), "ptrchase", "hashdb")
	checked, untracked, lists := 0, 0, 0
	var worst float64
	for k, l := range f.lists {
		h := f.histogram(k)
		if k.kind != valuemod.KindResult || l.N < 300 || h == nil {
			continue
		}
		lists++
		total := float64(h.Total())
		for _, e := range l.Entries {
			n, ok := h.Count(e.Value)
			if !ok {
				untracked++
				continue
			}
			p := float64(n) / total
			got := float64(e.Count<<l.Shift) / float64(l.N)
			sd := valuetest.ShareError(&l, float64(e.Count), p)
			if d := math.Abs(got - p); d > 4*sd+0.04 {
				t.Errorf("%s %#x value %#x (%d samples, τ %d): share %.3f, truth %.3f (±%.3f)", k.path, k.pc, e.Value, l.N, l.Tau(), got, p, sd)
			} else {
				worst = max(worst, d/(sd+0.01))
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("only %d values in %d lists checked", checked, lists)
	}
	t.Logf("%d values in %d result lists checked (worst %.1f standard deviations); %d listed values the truth did not count exactly", checked, lists, worst, untracked)
}

// TestSemiInvariantMatchesGroundTruth holds semiinv's finder to the truth:
// on a host running hashdb (two with DCPI_LONG=1), an operand is semi-invariant when one value
// holds for at least 90% of its executions (by the truth's exact counts).
// Every such operand sampled at least 200 times is found: its hot list's
// top value is the truth's, with an estimated share of at least 0.8. And
// the finder's ranking (operands whose top value holds at least
// values.SemiInvariantShare of the samples, by that share times the CYCLES
// samples there, as dcpi values --view semiinv ranks them) lists truly
// semi-invariant operands: of its ten best-ranked operands with 200
// samples or more, every one has a true top share within 0.1 of the
// threshold or above.
func TestSemiInvariantMatchesGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs timed hosts with ground truth")
	}
	if racedetect.Enabled {
		t.Skip("checks the simulator's numbers, single-threaded; the race run is for the concurrent parts")
	}
	f := runValueFleet(t, "semiinv", valueHosts(), "hashdb")
	type ranked struct {
		k     valueSite
		score float64
		share float64 // the truth's top share
		est   float64 // the hot list's
	}
	var rank []ranked
	found := 0
	for k, l := range f.lists {
		h := f.histogram(k)
		if (k.kind != valuemod.KindOperandA && k.kind != valuemod.KindOperandB) || h == nil || l.N < 200 || len(l.Entries) == 0 {
			continue
		}
		total := float64(h.Total())
		var top alpha.ValueCount
		for _, e := range h.Values {
			if e.Count > top.Count {
				top = e
			}
		}
		trueShare := float64(top.Count) / total
		best := slices.MaxFunc(l.Entries, func(a, b hotlist.Entry) int { return cmp.Compare(a.Count, b.Count) })
		est := float64(best.Count<<l.Shift) / float64(l.N)
		if trueShare >= 0.9 {
			if best.Value != top.Value || est < 0.8 {
				t.Errorf("%s %#x %v: truly semi-invariant (%#x, %.3f of %d executions); hot list's top %#x at %.3f of %d samples",
					k.path, k.pc, k.kind, top.Value, trueShare, h.Total(), best.Value, est, l.N)
			}
			found++
		}
		if est < values.SemiInvariantShare {
			continue
		}
		rank = append(rank, ranked{k, est * float64(f.cycles[valueSite{k.path, k.pc, 0}]), trueShare, est})
	}
	slices.SortFunc(rank, func(a, b ranked) int { return cmp.Compare(b.score, a.score) })
	for i, r := range rank[:min(10, len(rank))] {
		if r.share < values.SemiInvariantShare-0.1 {
			t.Errorf("rank %d: %s %#x %v (score %.0f, estimated top share %.3f) has a true top share of %.3f", i+1, r.k.path, r.k.pc, r.k.kind, r.score, r.est, r.share)
		}
	}
	if found < 10 || len(rank) < 10 {
		t.Fatalf("only %d truly semi-invariant operands sampled often enough (%d ranked)", found, len(rank))
	}
	t.Logf("%d truly semi-invariant operands found; %d ranked", found, len(rank))
}

// TestLoadLatencyRefusedOnEV6: load-latency sampling on the 21264 core is
// refused with the reason; register values are allowed there.
func TestLoadLatencyRefusedOnEV6(t *testing.T) {
	for _, c := range []struct {
		module string
		ok     bool
	}{{"loadlat", false}, {"regvals", true}} {
		cfg := machineConfig(t, 1)
		cfg.Model = alpha.EV6
		m, err := hwsim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ncfg := DefaultConfig()
		ncfg.Node.Values = node.DefaultValuesConfig(c.module)
		_, err = New(m, ncfg, &node.MemPublisher{})
		if c.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "out-of-order")) {
			t.Errorf("%s on ev6: %v", c.module, err)
		}
	}
}
