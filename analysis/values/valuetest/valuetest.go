// Package valuetest holds value sampling's acceptance check against
// ground truth, shared by the tests that make it: simhost's (one host's
// records merged in memory) and cmd/dcpi's fleet test (hot lists stored
// by the cluster). It compares a load-latency hot list's estimated shares
// per memory level with the true shares of the load's executions, within
// the estimate's stated error.
package valuetest

import (
	"fmt"
	"math"

	"dcpi/analysis/values"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/internal/hotlist"
)

// MinSamples is the fewest samples a list needs to be checked: below it
// the estimate's spread dwarfs the shares.
const MinSamples = 300

// Tolerance: a share passes within Sigmas standard deviations plus Bias,
// the sampling's own bias (interrupts land on stalled instructions, so
// the runs after them are not a uniform sample of executions).
const (
	Sigmas = 4
	Bias   = 0.04
)

// TruthLevels is a load's executions by the level its data came from, read
// from the D-, S- and B-cache miss events the timing model recorded at its
// PC (tr.Events: each miss at one level is a reference to the next).
func TruthLevels(tr *alpha.PCTruth) [values.NumLevels]uint64 {
	ev := tr.Events
	return [values.NumLevels]uint64{
		ev[alpha.EvLoads] - ev[alpha.EvDMiss],
		ev[alpha.EvDMiss] - ev[alpha.EvSMiss],
		ev[alpha.EvSMiss] - ev[alpha.EvBMiss],
		ev[alpha.EvBMiss],
	}
}

// Levels is one load's comparison: the estimated share of its samples at
// each level, the true share, and the estimate's standard deviation.
type Levels struct {
	Got, Want, SD [values.NumLevels]float64
}

// ShareError is one standard deviation of a share estimated from c counts
// of list l when the true share is p: the counts are binomial at 1/τ
// (τ·√c/N), and the sample of N executions has its own binomial spread
// (√(p(1-p)/N)).
func ShareError(l *hotlist.List, c, p float64) float64 {
	return float64(l.Tau())*math.Sqrt(max(c, 1))/float64(l.N) + math.Sqrt(p*(1-p)/float64(l.N))
}

// CompareLevels bins l's latencies by level (values.BinLatency) and
// compares the estimated shares τ·c/N with the true counts per level. err
// names each level outside Sigmas·SD + Bias.
func CompareLevels(l *hotlist.List, truth [values.NumLevels]uint64) (Levels, error) {
	var out Levels
	var loads uint64
	for _, n := range truth {
		loads += n
	}
	if loads == 0 || l.N == 0 {
		return out, fmt.Errorf("nothing to compare: %d true executions, %d samples", loads, l.N)
	}
	var counted [values.NumLevels]float64
	for _, e := range l.Entries {
		lv := values.BinLatency(e.Value)
		out.Got[lv] += float64(e.Count<<l.Shift) / float64(l.N)
		counted[lv] += float64(e.Count)
	}
	var bad []string
	for lv := range values.NumLevels {
		p := float64(truth[lv]) / float64(loads)
		out.Want[lv] = p
		out.SD[lv] = ShareError(l, counted[lv], p)
		if math.Abs(out.Got[lv]-p) > Sigmas*out.SD[lv]+Bias {
			bad = append(bad, fmt.Sprintf("%v share %.3f, truth %.3f (±%.3f)", values.Level(lv), out.Got[lv], p, out.SD[lv]))
		}
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("%d samples, τ %d: %v", l.N, l.Tau(), bad)
	}
	return out, nil
}

// SameLineFollower is values.SameLineFollower over an image's words.
func SameLineFollower(im *elfimage.Image, pc uint64) bool {
	return values.SameLineFollower(func(a uint64) (uint32, bool) {
		seg, ok := im.SegmentFor(a)
		if !ok || a < seg.Vaddr || a+4 > seg.Vaddr+uint64(len(seg.Data)) {
			return 0, false
		}
		o := a - seg.Vaddr
		return uint32(seg.Data[o]) | uint32(seg.Data[o+1])<<8 | uint32(seg.Data[o+2])<<16 | uint32(seg.Data[o+3])<<24, true
	}, pc)
}
