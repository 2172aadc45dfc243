package analysis

import (
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/google/pprof/profile"

	"dcpi/storage"
	"dcpi/wire"
)

// PprofQuery is a pprof export request.
type PprofQuery struct {
	// Filter selects the samples, with ProfQuery.Filter's rules; its
	// Events are used only when Events is nil.
	Filter storage.Query
	// Events are the sample types, in order; the first is the default.
	// nil means every event the selected samples hold, by number.
	Events []uint8
	// ImagePaths selects images by path, as ProfQuery.ImagePaths.
	ImagePaths []string
	// ByHost keeps each host's samples apart, labelled "host"; Filter.Hosts
	// must then list the hosts. Without it samples are summed over hosts
	// (the fleet roll-up when Filter.Hosts is nil), labelled with the host
	// only when Filter.Hosts names exactly one.
	ByHost bool
	// ByEpoch keeps each epoch's samples apart, labelled "epoch" (a
	// numeric label), with one read per epoch of Filter.Epochs, which must
	// then list them. Without it samples are summed over epochs, labelled
	// only when Filter.Epochs names exactly one.
	ByEpoch bool
}

// Pprof builds a pprof profile (github.com/google/pprof/profile) of q over
// src, so that `go tool pprof` (top, peek, tags, flame graphs) reads fleet
// profiles:
//
//   - one sample type per event: type the event's name, unit "samples";
//   - one Mapping per image: Start its load base (LoadBase), File the path
//     in its record, BuildID the build ID in hex (or "sha256:<hex>" for an
//     image identified by its content hash);
//   - one Location per (image, offset) with samples, at address base +
//     offset, with one Line naming the Function of the procedure that
//     covers it (symbols as Prof names them, UnknownProcedure where none
//     does);
//   - one Sample per (location, host, epoch) kept apart, its values
//     parallel to the sample types, labelled "host" (string) and "epoch"
//     (number) as q says.
//
// Every selected count appears exactly once, so the profile's total per
// sample type equals the database's total for that event.
func Pprof(src Source, q PprofQuery) (*profile.Profile, error) {
	if q.ByHost && q.Filter.Hosts == nil {
		return nil, fmt.Errorf("analysis: pprof: %w: by host needs the list of hosts", ErrQuery)
	}
	if q.ByEpoch && q.Filter.Epochs == nil {
		return nil, fmt.Errorf("analysis: pprof: %w: by epoch needs the list of epochs", ErrQuery)
	}
	b := &pprofBuilder{syms: NewSymbolizer(src), q: q, images: map[wire.ImageKey]*pprofImage{},
		samples: map[pprofSampleKey]*profile.Sample{}, p: &profile.Profile{}}
	for i := range b.colOf {
		b.colOf[i] = -1
	}
	sq := q.Filter
	if q.Events != nil {
		if len(q.Events) == 0 {
			return nil, fmt.Errorf("analysis: pprof: %w: no events", ErrQuery)
		}
		for _, e := range q.Events {
			if b.colOf[e] >= 0 {
				return nil, fmt.Errorf("analysis: pprof: %w: event %s listed twice", ErrQuery, EventName(e))
			}
			b.addColumn(e)
		}
		sq.Events = slices.Clone(q.Events)
	}
	reads := []storage.Query{sq}
	if q.ByEpoch {
		reads = reads[:0]
		for _, e := range slices.Compact(slices.Sorted(slices.Values(q.Filter.Epochs))) {
			r := sq
			r.Epochs = []uint64{e}
			reads = append(reads, r)
		}
	}
	for _, r := range reads {
		b.epoch = -1
		if len(r.Epochs) == 1 {
			b.epoch = int64(r.Epochs[0])
		}
		if !q.ByHost && len(r.Hosts) == 1 {
			b.host = r.Hosts[0]
		}
		if err := src.Profile(r, b.add); err != nil {
			return nil, fmt.Errorf("analysis: pprof: %w", err)
		}
	}
	return b.profile(), nil
}

type pprofBuilder struct {
	syms  *Symbolizer
	q     PprofQuery
	colOf [256]int
	cols  []uint8

	images  map[wire.ImageKey]*pprofImage
	samples map[pprofSampleKey]*profile.Sample // by host only

	// Slabs: a fleet profile has a location and a sample per instruction
	// with samples (500,000 in fleetdb's roll-up), allocated in chunks.
	locSlab    []profile.Location
	lineSlab   []profile.Line
	sampleSlab []profile.Sample
	ptrSlab    []*profile.Location
	valueSlab  []int64
	plSlab     []pprofLoc

	p     *profile.Profile
	epoch int64  // label of the current read; -1 none
	host  string // label when not by host

	lastKey wire.ImageKey
	last    *pprofImage
}

type pprofImage struct {
	table   *SymbolTable
	skip    bool
	mapping *profile.Mapping
	funcs   map[string]*profile.Function // by procedure name
	locs    map[uint64]*pprofLoc         // by offset, beyond dense
	dense   []*pprofLoc                  // by offset/4, for 4-aligned offsets in the text

	from, until uint64 // the last lookup's run (see profImage)
	lastFn      *profile.Function
}

// pprofLoc is a location and, when hosts are summed, its sample in the
// current read (an epoch's, with ByEpoch).
type pprofLoc struct {
	loc    *profile.Location
	sample *profile.Sample
	epoch  int64 // the read sample belongs to
}

type pprofSampleKey struct {
	loc   *profile.Location
	host  string
	epoch int64
}

const pprofSlab = 4096

func (b *pprofBuilder) addColumn(e uint8) int {
	b.colOf[e] = len(b.cols)
	b.cols = append(b.cols, e)
	return b.colOf[e]
}

func (b *pprofBuilder) image(key wire.ImageKey) (*pprofImage, error) {
	if im, ok := b.images[key]; ok {
		return im, nil
	}
	t, err := b.syms.Table(key)
	if err != nil {
		return nil, err
	}
	im := &pprofImage{table: t, skip: !matchPath(b.q.ImagePaths, t.Path), funcs: map[string]*profile.Function{}, locs: map[uint64]*pprofLoc{}}
	b.images[key] = im
	if im.skip {
		return im, nil
	}
	buildID := key.String()
	if key.Kind() == wire.KindBuildID {
		buildID = hex.EncodeToString(key.ID())
	}
	limit := t.Base + 1
	if rec, err := b.syms.Image(key); err == nil {
		limit = max(limit, rec.TextEnd)
		// Instructions lie in the text: a slot per instruction there
		// (offsets past it, rare, go to the map).
		if n := (rec.TextEnd - t.Base) / 4; rec.TextEnd > t.Base && n <= 1<<20 {
			im.dense = make([]*pprofLoc, n)
		}
	}
	im.mapping = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), Start: t.Base, Limit: limit, File: t.Path,
		BuildID: buildID, HasFunctions: true}
	b.p.Mapping = append(b.p.Mapping, im.mapping)
	return im, nil
}

// function returns the Function of the procedure covering offset in im.
func (b *pprofBuilder) function(im *pprofImage, offset uint64) *profile.Function {
	if im.lastFn != nil && offset >= im.from && offset < im.until {
		return im.lastFn
	}
	name := UnknownProcedure
	i, until, ok := im.table.lookup(offset)
	if ok {
		name = im.table.syms[i].Name
	}
	fn, ok := im.funcs[name]
	if !ok {
		fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name}
		b.p.Function = append(b.p.Function, fn)
		im.funcs[name] = fn
	}
	im.from, im.until, im.lastFn = offset, until, fn
	return fn
}

func (b *pprofBuilder) add(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error {
	im := b.last
	if im == nil || image != b.lastKey {
		var err error
		if im, err = b.image(image); err != nil {
			return err
		}
		b.lastKey, b.last = image, im
	}
	if im.skip || count == 0 {
		return nil
	}
	col := b.colOf[event]
	if col < 0 {
		col = b.addColumn(event)
	}
	var pl *pprofLoc
	slot := offset / 4
	useDense := offset%4 == 0 && slot < uint64(len(im.dense))
	if useDense {
		pl = im.dense[slot]
	} else {
		pl = im.locs[offset]
	}
	if pl == nil {
		if len(b.locSlab) == 0 {
			b.locSlab, b.lineSlab = make([]profile.Location, pprofSlab), make([]profile.Line, pprofSlab)
		}
		loc := &b.locSlab[0]
		b.locSlab = b.locSlab[1:]
		line := b.lineSlab[:1:1]
		b.lineSlab = b.lineSlab[1:]
		line[0] = profile.Line{Function: b.function(im, offset)}
		*loc = profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: im.mapping, Address: im.table.Base + offset, Line: line}
		b.p.Location = append(b.p.Location, loc)
		if len(b.plSlab) == 0 {
			b.plSlab = make([]pprofLoc, pprofSlab)
		}
		pl = &b.plSlab[0]
		b.plSlab = b.plSlab[1:]
		*pl = pprofLoc{loc: loc, epoch: -2}
		if useDense {
			im.dense[slot] = pl
		} else {
			im.locs[offset] = pl
		}
	}
	var s *profile.Sample
	if b.q.ByHost {
		sk := pprofSampleKey{pl.loc, host, b.epoch}
		if s = b.samples[sk]; s == nil {
			s = b.newSample(pl.loc, host)
			b.samples[sk] = s
		}
	} else {
		if pl.sample == nil || pl.epoch != b.epoch {
			pl.sample, pl.epoch = b.newSample(pl.loc, b.host), b.epoch
		}
		s = pl.sample
	}
	for len(s.Value) <= col {
		s.Value = append(s.Value, 0)
	}
	// pprof values are int64; a count past 2^63-1 (never, in practice)
	// saturates there.
	s.Value[col] = int64(min(uint64(s.Value[col])+min(count, 1<<63-1), 1<<63-1))
	return nil
}

// newSample adds a sample at loc, labelled with host (if any) and the
// current read's epoch (if any).
func (b *pprofBuilder) newSample(loc *profile.Location, host string) *profile.Sample {
	if len(b.sampleSlab) == 0 {
		b.sampleSlab, b.ptrSlab = make([]profile.Sample, pprofSlab), make([]*profile.Location, pprofSlab)
	}
	s := &b.sampleSlab[0]
	b.sampleSlab = b.sampleSlab[1:]
	locs := b.ptrSlab[:1:1]
	b.ptrSlab = b.ptrSlab[1:]
	locs[0] = loc
	n := max(len(b.cols), 1)
	if len(b.valueSlab) < n {
		b.valueSlab = make([]int64, n*pprofSlab)
	}
	*s = profile.Sample{Location: locs, Value: b.valueSlab[:0:n]}
	b.valueSlab = b.valueSlab[n:]
	if host != "" {
		s.Label = map[string][]string{"host": {host}}
	}
	if b.epoch >= 0 {
		s.NumLabel = map[string][]int64{"epoch": {b.epoch}}
	}
	b.p.Sample = append(b.p.Sample, s)
	return s
}

func (b *pprofBuilder) profile() *profile.Profile {
	p := b.p
	for _, e := range b.cols {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: EventName(e), Unit: "samples"})
	}
	for _, s := range p.Sample {
		for len(s.Value) < len(b.cols) {
			s.Value = append(s.Value, 0)
		}
	}
	if len(b.cols) > 0 {
		p.DefaultSampleType = EventName(b.cols[0])
		p.PeriodType = &profile.ValueType{Type: EventName(b.cols[0]), Unit: "samples"}
		p.Period = 1
	}
	p.Comments = []string{"dcpi: samples of the simulated 21164's performance counters, per instruction"}
	return p
}
