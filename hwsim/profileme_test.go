package hwsim_test

import (
	"math"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// meCollector keeps every ProfileMe sample delivered.
type meCollector struct {
	samples []hwsim.MeSample
	batches []int
	lost    uint64
	calls   int
}

func (c *meCollector) ProfileMeInterrupt(cpu int, s []hwsim.MeSample, lost uint64) uint64 {
	c.samples = append(c.samples, s...)
	c.batches = append(c.batches, len(s))
	c.lost += lost
	c.calls++
	return 100
}

func meRun(t *testing.T, me hwsim.ProfileMeConfig, name string, args ...string) (*hwsim.Machine, *meCollector) {
	t.Helper()
	return meRunOn(t, alpha.EV5, me, name, args...)
}

// meRunOn is meRun on CPU model (timed: the 21264 core for EV6).
func meRunOn(t *testing.T, model alpha.Model, me hwsim.ProfileMeConfig, name string, args ...string) (*hwsim.Machine, *meCollector) {
	t.Helper()
	cfg := machineWithWorkloads(t, 1)
	cfg.Model = model
	cfg.GroundTruth = true
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	col := &meCollector{}
	if err := m.StartProfileMe(me, col); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn("/bin/"+name, append([]string{"/bin/" + name}, args...), nil); err != nil {
		t.Fatal(err)
	}
	m.Run(0)
	m.FlushProfileMe()
	return m, col
}

// perPC sums the retired user-mode samples of a one-process run by PC.
type meSum struct {
	retired, dmiss uint64
	stall          [alpha.NumStallCauses]uint64
}

func sumUser(col *meCollector) map[uint64]*meSum {
	out := map[uint64]*meSum{}
	for _, s := range col.samples {
		if s.Kernel || !s.Retired() {
			continue
		}
		e := out[s.PC]
		if e == nil {
			e = &meSum{}
			out[s.PC] = e
		}
		e.retired++
		if s.Events&alpha.MeDMiss != 0 {
			e.dmiss++
		}
		for i, v := range s.Stall {
			e.stall[i] += uint64(v)
		}
	}
	return out
}

// TestProfileMeEveryInstruction tags every fetched instruction: the
// retired samples per PC are then the ground truth's executions, less
// only the records lost to full register copies, and where none was lost
// the sampled stall cycles by cause and the D-cache misses are the
// truth's exactly. Conservation: tags = delivered + lost + buffered.
func TestProfileMeEveryInstruction(t *testing.T) {
	m, col := meRun(t, hwsim.ProfileMeConfig{IntervalMin: 1, IntervalMax: 1, Copies: 16}, "ptrchase", "4096", "16384")
	st := m.ProfileMeStats()[0]
	if st.Tags != st.Delivered+st.Lost+uint64(st.Buffered) || st.Buffered != 0 {
		t.Fatalf("stats %+v do not conserve (buffered must be 0 after the flush)", st)
	}
	if st.Delivered != uint64(len(col.samples)) || st.Lost != col.lost {
		t.Fatalf("stats %+v, handler got %d samples, %d lost", st, len(col.samples), col.lost)
	}
	// Tagging every instruction, a load's record completes when its data
	// returns, after the next instructions have issued: some of them find
	// every copy full. A few percent, not most.
	if st.Lost*5 > st.Tags {
		t.Fatalf("%d of %d records lost", st.Lost, st.Tags)
	}
	truth := m.GroundTruth()["/bin/ptrchase"]
	got := sumUser(col)
	var diff, exact, dmissSeen uint64
	for pc, tr := range truth.PCs {
		g := got[pc]
		if g == nil {
			g = &meSum{}
		}
		if g.retired > tr.Executed {
			t.Fatalf("pc %#x: %d retired samples of %d executions", pc, g.retired, tr.Executed)
		}
		diff += tr.Executed - g.retired
		if g.retired == tr.Executed {
			exact++
			if g.stall != tr.Stall {
				t.Errorf("pc %#x: sampled stalls %v, truth %v", pc, g.stall, tr.Stall)
			}
			if g.dmiss != tr.Events[alpha.EvDMiss] {
				t.Errorf("pc %#x: %d D-miss samples, truth %d", pc, g.dmiss, tr.Events[alpha.EvDMiss])
			}
			dmissSeen += g.dmiss
		}
	}
	if diff > st.Lost {
		t.Fatalf("%d executions missing from the samples, only %d records lost", diff, st.Lost)
	}
	t.Logf("%d tags, %d lost; %d of %d PCs exact, %d D-misses there", st.Tags, st.Lost, exact, len(truth.PCs), dmissSeen)
	if exact*2 < uint64(len(truth.PCs)) || dmissSeen == 0 {
		t.Fatalf("only %d of %d PCs exact (%d D-misses seen)", exact, len(truth.PCs), dmissSeen)
	}
	// Every record: stall causes fit in the head cycles; a D-miss is a
	// load; it retired or says why not.
	for _, s := range col.samples {
		var sum uint64
		for _, v := range s.Stall {
			sum += uint64(v)
		}
		if sum > uint64(s.Head) {
			t.Fatalf("record %+v: stalls %d beyond head cycles %d", s.MeRecord, sum, s.Head)
		}
		if s.Events&alpha.MeDMiss != 0 && s.LoadLatency == 0 {
			t.Fatalf("record %+v: a D-miss that is not a load", s.MeRecord)
		}
		if !s.Retired() && s.Abort == alpha.TrapNone {
			t.Fatalf("record %+v: neither retired nor aborted", s.MeRecord)
		}
	}
}

// TestProfileMeEstimates samples one instruction in about 128, on the
// 21164 and on the 21264 core: per PC, k retired samples times S
// estimate the executions with relative error about 1/sqrt(k), so about
// two thirds of the PCs fall inside y = 1 ± 1/sqrt(k) (ProfileMe Figure
// 3), and the total is close. On the 21264 the counter also counts
// wrong-path fetches (about 1% of ptrchase's), so k·S of the retired
// samples overestimates the retires by that share, well inside the
// tolerance.
func TestProfileMeEstimates(t *testing.T) {
	for _, model := range []alpha.Model{alpha.EV5, alpha.EV6} {
		t.Run(model.Name, func(t *testing.T) {
			cfg := hwsim.ProfileMeConfig{IntervalMin: 64, IntervalMax: 192, Copies: 4}
			m, col := meRunOn(t, model, cfg, "ptrchase", "4096", "16384")
			truth := m.GroundTruth()["/bin/ptrchase"]
			S := cfg.MeanInterval()
			var in, n int
			var est, act float64
			for _, tr := range truth.PCs {
				act += float64(tr.Executed)
			}
			for pc, g := range sumUser(col) {
				tr := truth.PCs[pc]
				if tr == nil {
					continue // a CALL_PAL: ground truth records no PAL calls
				}
				est += float64(g.retired) * S
				if g.retired < 10 {
					continue
				}
				n++
				ratio := float64(g.retired) * S / float64(tr.Executed)
				if math.Abs(ratio-1) <= 1/math.Sqrt(float64(g.retired)) {
					in++
				}
			}
			if n < 20 {
				t.Fatalf("only %d PCs with 10 or more samples", n)
			}
			share := float64(in) / float64(n)
			t.Logf("%d of %d PCs inside 1 ± 1/sqrt(k) (%.2f); total estimate %.0f of %.0f", in, n, share, est, act)
			if share < 0.5 || share > 0.9 {
				t.Errorf("%.2f of PCs inside the one-sigma envelope: want about 2/3", share)
			}
			if math.Abs(est/act-1) > 0.03 {
				t.Errorf("total estimate %.0f of %.0f executions", est, act)
			}
		})
	}
}

// TestProfileMeEveryInstructionEV6 tags every instruction the 21264 core
// fetches: per PC the retired samples are the ground truth's retires
// less only records lost to full copies, and where none was lost the
// D-cache misses are the truth's exactly; wrong-path fetches are sampled
// as squashed; the Table 1 stages add up to fetch-to-retire.
func TestProfileMeEveryInstructionEV6(t *testing.T) {
	m, col := meRunOn(t, alpha.EV6, hwsim.ProfileMeConfig{IntervalMin: 1, IntervalMax: 1, Copies: 16}, "ptrchase", "4096", "16384")
	st := m.ProfileMeStats()[0]
	if st.Tags != st.Delivered+st.Lost+uint64(st.Buffered) || st.Buffered != 0 || st.Delivered != uint64(len(col.samples)) {
		t.Fatalf("stats %+v do not conserve (handler got %d)", st, len(col.samples))
	}
	truth := m.GroundTruth()["/bin/ptrchase"]
	got := sumUser(col)
	var diff, exact, dmissSeen uint64
	for pc, tr := range truth.PCs {
		g := got[pc]
		if g == nil {
			g = &meSum{}
		}
		if g.retired > tr.Executed {
			t.Fatalf("pc %#x: %d retired samples of %d executions", pc, g.retired, tr.Executed)
		}
		diff += tr.Executed - g.retired
		if g.retired == tr.Executed {
			exact++
			if g.dmiss != tr.Events[alpha.EvDMiss] {
				t.Errorf("pc %#x: %d D-miss samples, truth %d", pc, g.dmiss, tr.Events[alpha.EvDMiss])
			}
			dmissSeen += g.dmiss
		}
	}
	if diff > st.Lost {
		t.Fatalf("%d executions missing from the samples, only %d records lost", diff, st.Lost)
	}
	var squashed int
	for _, s := range col.samples {
		r := s.MeRecord
		if r.Retired() {
			var sum uint64
			for _, v := range r.Stages {
				sum += uint64(v)
			}
			if sum != r.Finished-r.Fetched || r.Stages[alpha.MeIssueToRetReady] == 0 {
				t.Fatalf("record %+v: stages sum to %d, fetch to retire is %d", r, sum, r.Finished-r.Fetched)
			}
			continue
		}
		if r.Abort == alpha.TrapSquash {
			squashed++
			if r.Stages[alpha.MeIssueToRetReady] != 0 || r.Finished < r.Fetched {
				t.Fatalf("squashed record %+v", r)
			}
		}
	}
	t.Logf("%d tags, %d lost, %d squashed; %d of %d PCs exact, %d D-misses there", st.Tags, st.Lost, squashed, exact, len(truth.PCs), dmissSeen)
	if exact*2 < uint64(len(truth.PCs)) || dmissSeen == 0 || squashed == 0 {
		t.Fatalf("only %d of %d PCs exact (%d D-misses seen), %d squashed samples", exact, len(truth.PCs), dmissSeen, squashed)
	}
}

// TestProfileMeWrongPath: on a branchy workload the 21264 core's samples
// include wrong-path instructions, aborted as squashed; the 21164 model
// fetches only the correct path and has none.
func TestProfileMeWrongPath(t *testing.T) {
	cfg := hwsim.ProfileMeConfig{IntervalMin: 32, IntervalMax: 96, Copies: 8}
	for _, model := range []alpha.Model{alpha.EV5, alpha.EV6} {
		_, col := meRunOn(t, model, cfg, "sort", "2000")
		var squashed, retired int
		for _, s := range col.samples {
			if s.Abort == alpha.TrapSquash {
				squashed++
			}
			if s.Retired() {
				retired++
			}
		}
		t.Logf("%s: %d samples, %d retired, %d squashed", model.Name, len(col.samples), retired, squashed)
		switch {
		case model == alpha.EV5 && squashed != 0:
			t.Errorf("%d squashed samples on the 21164", squashed)
		case model == alpha.EV6 && squashed*100 < len(col.samples):
			t.Errorf("%d squashed samples of %d on the 21264: want at least 1%%", squashed, len(col.samples))
		}
	}
}

// TestProfileMePairs: paired sampling on both cores delivers pairs whole,
// first then second, in one interrupt, with the same distance in [1, W];
// the second was fetched no earlier than the first; and every tag is
// delivered, lost (pairs lost whole) or buffered.
func TestProfileMePairs(t *testing.T) {
	for _, tc := range []struct {
		model alpha.Model
		cfg   hwsim.ProfileMeConfig
		w     uint32
	}{
		{alpha.EV5, hwsim.ProfileMeConfig{IntervalMin: 20, IntervalMax: 40, Copies: 5, Paired: true}, 16},
		{alpha.EV6, hwsim.ProfileMeConfig{IntervalMin: 200, IntervalMax: 400, Copies: 4, Paired: true}, 128},
	} {
		t.Run(tc.model.Name, func(t *testing.T) {
			m, col := meRunOn(t, tc.model, tc.cfg, "ptrchase", "4096", "16384")
			for _, n := range col.batches {
				if n%2 != 0 {
					t.Fatalf("an interrupt delivered %d records: a pair split", n)
				}
			}
			seen := map[uint32]bool{}
			for i := 0; i+1 < len(col.samples); i += 2 {
				a, b := col.samples[i], col.samples[i+1]
				if a.Pair != alpha.MeFirst || b.Pair != alpha.MeSecond || a.PairDistance != b.PairDistance ||
					a.PairDistance < 1 || a.PairDistance > tc.w || b.Fetched < a.Fetched {
					t.Fatalf("records %d, %d are not a pair: %+v / %+v", i, i+1, a.MeRecord, b.MeRecord)
				}
				seen[a.PairDistance] = true
			}
			st := m.ProfileMeStats()[0]
			if st.Tags != st.Delivered+st.Lost+uint64(st.Buffered) || st.Buffered != 0 || st.LostPairs*2 > st.Lost+1 {
				t.Fatalf("stats %+v do not conserve", st)
			}
			t.Logf("%d pairs delivered, %d distances seen, %d lost (%d pairs)", len(col.samples)/2, len(seen), st.Lost, st.LostPairs)
			if len(col.samples) < 200 || len(seen) < int(tc.w)*3/4 {
				t.Fatalf("%d records, %d distances", len(col.samples), len(seen))
			}
		})
	}
}

func TestProfileMeConfigErrors(t *testing.T) {
	for _, c := range []hwsim.ProfileMeConfig{{IntervalMin: 0, IntervalMax: 4, Copies: 1}, {IntervalMin: 5, IntervalMax: 4, Copies: 1}, {IntervalMin: 1, IntervalMax: 4, Copies: 0},
		{IntervalMin: 100, IntervalMax: 200, Copies: 1, Paired: true},
		{IntervalMin: 100, IntervalMax: 200, Copies: 4, Paired: true, PairWindow: 100},
		{IntervalMin: 100, IntervalMax: 200, Copies: 4, PairWindow: 16}} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	// On the 21264 the window must cover the in-flight window, and the
	// default (128) must fit below the major interval.
	for _, c := range []hwsim.ProfileMeConfig{{IntervalMin: 100, IntervalMax: 200, Copies: 4, Paired: true},
		{IntervalMin: 1000, IntervalMax: 2000, Copies: 4, Paired: true, PairWindow: 40}} {
		cfg := machineWithWorkloads(t, 1)
		cfg.Model = alpha.EV6
		m, err := hwsim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.StartProfileMe(c, &meCollector{}); err == nil {
			t.Errorf("%+v accepted on the 21264", c)
		}
	}
}

// TestProfileMeEV6UnderCounterInterrupts: with counter interrupts beside
// ProfileMe on the 21264, the interrupted instruction's fetch is counted
// once (by the core's observer, which reports it killed), never also as
// the 21164's interrupt abort — whose head cycles, with no 21164 issue
// model to measure from, came out as the whole run's cycles.
func TestProfileMeEV6UnderCounterInterrupts(t *testing.T) {
	cfg := machineWithWorkloads(t, 1)
	cfg.Model = alpha.EV6
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	col := &meCollector{}
	if err := m.StartProfileMe(hwsim.ProfileMeConfig{IntervalMin: 1, IntervalMax: 1, Copies: 16}, col); err != nil {
		t.Fatal(err)
	}
	prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
		{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: 2000, PeriodMax: 3000}}, InterruptCycles: 214}
	counters := &collector{}
	if err := m.StartProfiling(prof, counters); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn("/bin/ptrchase", []string{"/bin/ptrchase", "4096", "16384"}, nil); err != nil {
		t.Fatal(err)
	}
	m.Run(0)
	m.FlushProfileMe()
	st := m.ProfileMeStats()[0]
	if st.Tags != st.Delivered+st.Lost+uint64(st.Buffered) || len(counters.samples) < 100 {
		t.Fatalf("stats %+v, %d counter interrupts", st, len(counters.samples))
	}
	for _, s := range col.samples {
		if s.Abort == alpha.TrapEvent || s.Head != 0 {
			t.Fatalf("a 21264 record with the 21164's interrupt abort or head cycles: %+v", s.MeRecord)
		}
	}
}
