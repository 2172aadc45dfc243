package pprofexport

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/analysis/profileme"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// ProfileMeQuery is a pprof export of ProfileMe samples.
type ProfileMeQuery struct {
	// Filter and ImagePaths select as in profileme.Query; with Filter.Hosts set
	// each host's samples stay apart, labelled "host".
	Filter     storage.Query
	ImagePaths []string
	// Interval is S, the mean fetched instructions per sample.
	Interval float64
	// Files and Found are PprofQuery's: DWARF lines and mapping offsets.
	Files symbolize.ImageFinder
	Found func(rec *wire.ImageRecord, data []byte, where string)
}

// meSampleType is one ProfileMe sample type of the export: its name and
// unit, and its value from an instruction's sums.
type meSampleType struct {
	name, unit string
	value      func(c *wire.MeCounts, s float64) float64
}

// mePprofTypes are the export's sample types: estimates k·S of what the
// instructions did (fetched, retired, aborted by reason, each event), the
// cycles the samples' sums stand for (head-of-queue and load latency, each
// sum times S), then the samples themselves. The first, fetched, is the
// default: the profile of where instructions were fetched, as a flat
// instruction-count profile.
var mePprofTypes = func() []meSampleType {
	kS := func(f int) func(*wire.MeCounts, float64) float64 {
		return func(c *wire.MeCounts, s float64) float64 { return float64(c[f]) * s }
	}
	t := []meSampleType{{"fetched", "count", kS(wire.MeSamples)}, {"retired", "count", kS(wire.MeRetired)},
		{"abort_interrupt", "count", kS(wire.MeAbortIntr)}, {"abort_trap", "count", kS(wire.MeAbortTrap)}}
	for f := wire.MeTaken; f <= wire.MeWBFull; f++ {
		t = append(t, meSampleType{wire.MeFieldName(f), "count", kS(f)})
	}
	return append(t, meSampleType{"head_cycles", "cycles", kS(wire.MeHeadCycles)},
		meSampleType{"load_latency", "cycles", kS(wire.MeLoadLatency)},
		meSampleType{"samples", "count", func(c *wire.MeCounts, _ float64) float64 { return float64(c[wire.MeSamples]) }})
}()

// ProfileMe builds a pprof profile of ProfileMe samples: mappings,
// locations and functions as Pprof makes them (one location per sampled
// instruction, DWARF lines when q.Files finds the image), and one sample
// per (instruction, host kept apart) whose values are the sample types
// above (fetched, retired, abort_interrupt, abort_trap, taken, mispredict,
// imiss, itbmiss, dmiss, dtbmiss, smiss, bmiss, wbfull, head_cycles,
// load_latency, samples). Estimates are rounded to whole events; Period is
// S, so the default type reads as "one sample per S fetched instructions".
func ProfileMe(ctx context.Context, syms *symbolize.Symbolizer, src profileme.Source, q ProfileMeQuery) (*profile.Profile, error) {
	if q.Interval <= 0 || math.IsInf(q.Interval, 0) || math.IsNaN(q.Interval) {
		return nil, fmt.Errorf("analysis: ProfileMe pprof: %w: interval %g (want a positive number of fetched instructions per sample)", analysis.ErrQuery, q.Interval)
	}
	b := &pprofBuilder{syms: syms, q: PprofQuery{ImagePaths: q.ImagePaths, Files: q.Files, Found: q.Found},
		images: map[wire.ImageKey]*pprofImage{}, samples: map[pprofSampleKey]*profile.Sample{}, p: &profile.Profile{}}
	b.epoch = -1
	if len(q.Filter.Epochs) == 1 {
		b.epoch = int64(q.Filter.Epochs[0])
	}
	err := src.MeProfile(ctx, q.Filter, func(r *storage.MeRow) error {
		im, err := b.image(ctx, r.Image)
		if err != nil || im.skip {
			return err
		}
		im.samples += r.Counts[wire.MeSamples]
		pl := b.location(im, r.Offset)
		host := r.Host
		if host == "" && len(q.Filter.Hosts) == 1 {
			host = q.Filter.Hosts[0]
		}
		s := b.newSample(pl.loc, host)
		s.Value = make([]int64, len(mePprofTypes))
		for i, t := range mePprofTypes {
			s.Value[i] = int64(math.Min(math.Round(t.value(&r.Counts, q.Interval)), math.MaxInt64))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("analysis: ProfileMe pprof: %w", err)
	}
	p := b.p
	for _, t := range mePprofTypes {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: t.name, Unit: t.unit})
	}
	p.DefaultSampleType = mePprofTypes[0].name
	p.PeriodType = &profile.ValueType{Type: mePprofTypes[0].name, Unit: mePprofTypes[0].unit}
	p.Period = max(int64(math.Round(q.Interval)), 1)
	b.orderMappings()
	p.Comments = []string{fmt.Sprintf("dcpi: ProfileMe instruction samples, one per %.0f fetched instructions (S); each estimate is k·S, relative error about 1/sqrt(k)", q.Interval)}
	return p, nil
}

// MeExport is dcpi me --pprof's export: the profile and the S it was
// built with, which its summary names.
type MeExport struct {
	Profile  *profile.Profile
	Interval float64
}

// ExportProfileMe is ProfileMe for dcpi me --pprof: a selection without
// samples is an error (a profile with none would read as a profile of an
// idle machine), asking whether the nodes sampled at all.
func ExportProfileMe(ctx context.Context, syms *symbolize.Symbolizer, src profileme.Source, q ProfileMeQuery) (*MeExport, error) {
	p, err := ProfileMe(ctx, syms, src, q)
	if err != nil {
		return nil, err
	}
	if len(p.Sample) == 0 {
		return nil, fmt.Errorf("no ProfileMe samples selected (were the nodes run with --profileme?)")
	}
	return &MeExport{Profile: p, Interval: q.Interval}, nil
}

// WriteSummary writes the one line that says what the export written to
// name holds: its sampled instructions, images, sample types and S.
func (e *MeExport) WriteSummary(w io.Writer, name string) error {
	p := e.Profile
	_, err := fmt.Fprintf(w, "wrote %s: %d sampled instructions in %d images, %d sample types (default fetched; S = %.0f)\n",
		name, len(p.Sample), len(p.Mapping), len(p.SampleType), e.Interval)
	return err
}
