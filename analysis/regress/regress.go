// Package regress finds regressions: it compares the newest sealed epoch
// with a baseline of the sealed epochs before it, per image and per
// procedure, with dcpi diff's significance test (report.CompareShares,
// ProfileMe sec. 5.1), and returns the significant changes in share as
// findings, bounded and ranked. It is pure: the profile comes in through
// analysis.Source and the epochs as a list, and nothing here runs a loop,
// keeps state or exports metrics (package cluster's regression watch
// does, and analysis/web's /regressions page calls Evaluate on demand).
package regress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/storage"
)

// Defaults of Options.
const (
	DefaultBaseline   = 6   // sealed epochs pooled as the baseline
	DefaultTop        = 20  // findings kept, by |z|
	DefaultMinSamples = 100 // samples a row needs in the epoch or per baseline epoch
)

// ErrOption is a bad option: a baseline or bound below 1, a threshold
// that is not a positive number.
var ErrOption = errors.New("bad regression option")

// ErrNotSealed: the epoch asked for is not sealed (open, closing, or
// unknown), so its samples may still grow and it is not evaluated.
var ErrNotSealed = fmt.Errorf("%w: epoch not sealed", analysis.ErrQuery)

// ErrNoSealed: the database holds no sealed epoch yet.
var ErrNoSealed = errors.New("no sealed epoch yet: an epoch is evaluated once it is cut and sealed")

// Options are how an epoch is compared with its baseline.
type Options struct {
	// Baseline is how many sealed epochs before the evaluated one are
	// pooled as its baseline (fewer when fewer exist).
	Baseline int
	// Top bounds the findings: the Top largest by |z|.
	Top int
	// Z is the significance threshold in standard errors (dcpi diff's,
	// report.DefaultZ by default).
	Z float64
	// MinSamples is the floor below which a row is not judged: its
	// samples in the evaluated epoch, or its mean per baseline epoch, must
	// reach it, so a procedure of a handful of samples never alerts.
	MinSamples uint64
	// Event is the event whose shares are compared (0: cycles).
	Event uint8
}

// DefaultOptions are the options of a watch or page given none.
func DefaultOptions() Options {
	return Options{Baseline: DefaultBaseline, Top: DefaultTop, Z: report.DefaultZ, MinSamples: DefaultMinSamples}
}

// Validate refuses options no evaluation can use.
func (o Options) Validate() error {
	switch {
	case o.Baseline < 1:
		return fmt.Errorf("%w: baseline %d: want at least 1 epoch", ErrOption, o.Baseline)
	case o.Top < 1:
		return fmt.Errorf("%w: top %d: want at least 1 finding", ErrOption, o.Top)
	case !(o.Z > 0) || math.IsInf(o.Z, 0):
		return fmt.Errorf("%w: z %v: want a positive number of standard errors", ErrOption, o.Z)
	}
	return nil
}

// Query is one evaluation: which epoch, within which part of the
// profile, with which options.
type Query struct {
	// Epoch is the sealed epoch evaluated (0: the newest sealed one).
	Epoch uint64
	// Filter narrows both sides (hosts, images, PIDs); its Epochs are
	// replaced by the epoch's and the baseline's.
	Filter     storage.Query
	ImagePaths []string
	Options
}

// Direction is which way a finding's share moved.
type Direction string

// The directions: a share that grew (a regression: the procedure costs
// more of the fleet's time than it did) or shrank.
const (
	Increase Direction = "increase"
	Decrease Direction = "decrease"
)

// Finding is one significant change in share between the baseline and
// the evaluated epoch.
type Finding struct {
	Image string `json:"image"`
	// Procedure is "" for a finding about the whole image.
	Procedure string    `json:"procedure,omitempty"`
	Direction Direction `json:"direction"`
	// Z is the change's z-score (report.ShareChange): positive for an
	// increase.
	Z float64 `json:"z"`
	// BaselinePct and SharePct are the shares of the baseline's and the
	// epoch's samples, in percent.
	BaselinePct float64 `json:"baseline_share_pct"`
	SharePct    float64 `json:"share_pct"`
	// BaselineSamples (pooled over the baseline's epochs) and Samples
	// are the counts behind the shares.
	BaselineSamples uint64 `json:"baseline_samples"`
	Samples         uint64 `json:"samples"`
}

// Evaluation is an epoch compared with its baseline.
type Evaluation struct {
	Epoch uint64 `json:"epoch"`
	// Baseline lists the sealed epochs pooled, ascending; empty when the
	// epoch is the first sealed one (nothing to compare: no findings).
	Baseline []uint64 `json:"baseline"`
	Event    string   `json:"event"`
	// Samples and BaselineSamples are the two sides' totals.
	Samples         uint64 `json:"samples"`
	BaselineSamples uint64 `json:"baseline_samples"`
	// Findings are the significant changes above the floor, largest |z|
	// first, at most Options.Top; Significant counts them before that
	// bound.
	Findings    []Finding `json:"findings"`
	Significant int       `json:"significant"`
	Options     Options   `json:"options"`
}

// Evaluate compares q.Epoch (the newest sealed epoch when 0) with the
// q.Baseline sealed epochs before it, pooled, per image and per
// procedure. An epoch that is not sealed is refused (ErrNotSealed): its
// counts may still grow, and a partial epoch would look like a drop.
func Evaluate(ctx context.Context, src analysis.Source, epochs []storage.Epoch, q Query) (*Evaluation, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	sealed := sealedNumbers(epochs)
	target := q.Epoch
	if target == 0 {
		if len(sealed) == 0 {
			return nil, ErrNoSealed
		}
		target = sealed[len(sealed)-1]
	}
	i, ok := slices.BinarySearch(sealed, target)
	if !ok {
		return nil, fmt.Errorf("%w: epoch %d (%s)", ErrNotSealed, target, stateOf(epochs, target))
	}
	ev := &Evaluation{Epoch: target, Baseline: slices.Clone(sealed[max(0, i-q.Baseline):i]), Event: analysis.EventName(q.Event),
		Options: q.Options, Findings: []Finding{}}
	if len(ev.Baseline) == 0 {
		return ev, nil
	}
	a, b := q.Filter, q.Filter
	a.Epochs, b.Epochs = ev.Baseline, []uint64{target}
	for _, by := range []report.By{report.ByImage, report.ByProcedure} {
		t, err := report.Diff(ctx, src, report.DiffQuery{
			A: analysis.SampleSet{Name: "baseline", Filter: a}, B: analysis.SampleSet{Name: "epoch", Filter: b},
			Event: q.Event, ImagePaths: q.ImagePaths, By: by, Z: q.Z})
		if err != nil {
			return nil, fmt.Errorf("regress: epoch %d: %w", target, err)
		}
		ev.BaselineSamples, ev.Samples = t.A.Total, t.B.Total
		for _, r := range t.Rows {
			if !r.Significant || !aboveFloor(r.CountA, len(ev.Baseline), r.CountB, q.MinSamples) {
				continue
			}
			f := Finding{Image: r.Image, Procedure: r.Procedure, Direction: Increase, Z: r.Z,
				BaselinePct: r.SharePctA, SharePct: r.SharePctB, BaselineSamples: r.CountA, Samples: r.CountB}
			if r.Z < 0 {
				f.Direction = Decrease
			}
			ev.Findings = append(ev.Findings, f)
		}
	}
	slices.SortFunc(ev.Findings, func(x, y Finding) int {
		if c := cmp.Compare(math.Abs(y.Z), math.Abs(x.Z)); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Image, y.Image); c != 0 {
			return c
		}
		return cmp.Compare(x.Procedure, y.Procedure)
	})
	ev.Significant = len(ev.Findings)
	if len(ev.Findings) > q.Top {
		ev.Findings = ev.Findings[:q.Top]
	}
	return ev, nil
}

// aboveFloor: the row's samples in the epoch, or its mean per baseline
// epoch, reach min. The mean, not the pooled count, so a procedure of a
// few samples per epoch does not pass by being pooled K times.
func aboveFloor(baseline uint64, nBaseline int, epoch, min uint64) bool {
	return epoch >= min || baseline/uint64(nBaseline) >= min
}

// Due lists the sealed epochs a watch evaluates next, ascending: the
// sealed epochs after last, up to the first epoch after last that is not
// sealed. An epoch sealed ahead of an older one still closing waits for
// it, so each epoch is evaluated once, and with its whole baseline. With
// last 0 (nothing evaluated yet) only the newest of them is due: a watch
// that starts on a long history judges the present, not every past epoch.
func Due(epochs []storage.Epoch, last uint64) []uint64 {
	es := slices.Clone(epochs)
	slices.SortFunc(es, func(a, b storage.Epoch) int { return cmp.Compare(a.Number, b.Number) })
	var due []uint64
	for _, e := range es {
		if e.Number <= last {
			continue
		}
		if e.State != storage.EpochSealed {
			break
		}
		due = append(due, e.Number)
	}
	if last == 0 && len(due) > 1 {
		due = due[len(due)-1:]
	}
	return due
}

// sealedNumbers are the sealed epochs' numbers, ascending.
func sealedNumbers(epochs []storage.Epoch) []uint64 {
	var out []uint64
	for _, e := range epochs {
		if e.State == storage.EpochSealed {
			out = append(out, e.Number)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func stateOf(epochs []storage.Epoch, n uint64) string {
	for _, e := range epochs {
		if e.Number == n {
			return e.State.String()
		}
	}
	return "no such epoch"
}
