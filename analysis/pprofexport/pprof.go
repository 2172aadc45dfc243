package pprofexport

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/elfimage"
	"dcpi/storage"
	"dcpi/wire"
)

// PprofQuery is a pprof export request.
type PprofQuery struct {
	// Filter selects the samples, with report.ProfQuery.Filter's rules; its
	// Events are used only when Events is nil.
	Filter storage.Query
	// Events are the sample types, in order; the first is the default.
	// nil means every event the selected samples hold, by number.
	Events []uint8
	// ImagePaths selects images by path, as report.ProfQuery.ImagePaths.
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
	// Periods are the events' mean sampling periods (events per sample,
	// e.g. 63488 for cycles sampled every 60K to 64K cycles). An event
	// with a period gets a second sample type, its estimated count
	// (samples x period); nil: samples only.
	Periods map[uint8]int64
	// Files, when set, finds each image's bytes: its DWARF gives every
	// location its source file and line, with the frames of inlined
	// procedures, and its program headers the mapping's file offset.
	// An image whose bytes are not found keeps symbol names only.
	Files symbolize.ImageFinder
	// Found, when set, is called once for each image whose bytes Files
	// found (say, to write them where pprof's PPROF_BINARY_PATH looks).
	Found func(rec *wire.ImageRecord, data []byte, where string)
	// Flat exports the flat profile even when the source holds call
	// stacks for the selection: one single-frame sample per instruction.
	Flat bool
}

// Pprof builds a pprof profile (github.com/google/pprof/profile) of q over
// src, so that `go tool pprof` (top, peek, tags, flame graphs) reads fleet
// profiles:
//
//   - per event E, in order: with a period in q.Periods, type E unit
//     "count", the estimated number of events (samples x period), then
//     type E_samples unit "count", the samples; without a period, type
//     E unit "samples" alone. The first type is the default, and the
//     profile's PeriodType and Period (1 for samples) are its;
//   - one Mapping per image, the user images by samples first (pprof
//     takes the first as the main binary) and the kernel last: File the
//     path in its record, BuildID the build ID in hex (or "sha256:<hex>"
//     for an image identified by its content hash); Start, Limit and
//     Offset the text segment's address range and file offset when q.Files
//     finds the image (so pprof's -disasm maps addresses into the file),
//     else from the load base (LoadBase) with offset 0;
//   - one Location per (image, offset) with samples, at address base +
//     offset. Without DWARF it has one Line naming the Function of the
//     procedure that covers it (symbols as Prof names them,
//     symbolize.UnknownProcedure where none does). With DWARF it has one Line per
//     frame, innermost first: the line table's file and line in the
//     innermost inlined procedure, then each enclosing procedure at its
//     call site; the outermost frame is the symbol's procedure. Functions
//     carry the file of their lines and the line DWARF declares them at;
//   - one Sample per (location, host, epoch) kept apart, its values
//     parallel to the sample types, labelled "host" (string) and "epoch"
//     (number) as q says.
//
// Every selected count appears exactly once, so the profile's total per
// sample type equals the database's total for that event.
//
// When the source holds call stacks (analysis.StackSource) for the selection and
// q.Flat is not set, the samples are the stacks' instead: one Sample per
// (stack, host, epoch) kept apart, its Locations leaf first — the sampled
// instruction's location as above, then each caller's call site, the
// instruction before its return address (return address - 4), with
// symbols and lines found the same way — so flame graphs and pprof's
// callers/callees views work. A truncated stack ends in a location of the
// function "[truncated]" and a frame no image map covered is a location
// of symbolize.UnknownProcedure at its raw address, both without a mapping. Stacks
// are selected by their leaf's image. Their totals are the stack view's:
// the flat profile's less the samples whose stacks were dropped (storage's
// StackTotals), which the profile's comments report.
func Pprof(ctx context.Context, src analysis.Source, q PprofQuery) (*profile.Profile, error) {
	if q.ByHost && q.Filter.Hosts == nil {
		return nil, fmt.Errorf("analysis: pprof: %w: by host needs the list of hosts", analysis.ErrQuery)
	}
	if q.ByEpoch && q.Filter.Epochs == nil {
		return nil, fmt.Errorf("analysis: pprof: %w: by epoch needs the list of epochs", analysis.ErrQuery)
	}
	for e, n := range q.Periods {
		if n <= 0 {
			return nil, fmt.Errorf("analysis: pprof: %w: event %s: period %d (want > 0)", analysis.ErrQuery, analysis.EventName(e), n)
		}
	}
	b := &pprofBuilder{syms: symbolize.New(src), q: q, images: map[wire.ImageKey]*pprofImage{},
		samples: map[pprofSampleKey]*profile.Sample{}, p: &profile.Profile{}}
	for i := range b.colOf {
		b.colOf[i] = -1
	}
	sq := q.Filter
	if q.Events != nil {
		if len(q.Events) == 0 {
			return nil, fmt.Errorf("analysis: pprof: %w: no events", analysis.ErrQuery)
		}
		for _, e := range q.Events {
			if b.colOf[e] >= 0 {
				return nil, fmt.Errorf("analysis: pprof: %w: event %s listed twice", analysis.ErrQuery, analysis.EventName(e))
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
	ss, withStacks := src.(analysis.StackSource)
	withStacks = withStacks && !q.Flat
	if withStacks {
		for _, r := range reads {
			b.startRead(r)
			addStack := func(st *storage.Stack, event uint8, host string, count uint64) error {
				return b.addStack(ctx, st, event, host, count)
			}
			if err := ss.Stacks(ctx, r, addStack); err != nil {
				if errors.Is(err, analysis.ErrNoStacks) {
					break // a symbolize.Symbolizer over a source without stacks
				}
				return nil, fmt.Errorf("analysis: pprof: stacks: %w", err)
			}
		}
		withStacks = b.stacks.rows > 0
	}
	if !withStacks {
		for _, r := range reads {
			b.startRead(r)
			add := func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error {
				return b.add(ctx, image, offset, event, host, count)
			}
			if err := src.Profile(ctx, r, add); err != nil {
				return nil, fmt.Errorf("analysis: pprof: %w", err)
			}
		}
	}
	p := b.profile()
	if withStacks {
		p.Comments = append(p.Comments, fmt.Sprintf("dcpi: samples by call stack (%d stacks), leaf first; callers at their call sites", b.stacks.rows))
	}
	return p, nil
}

// startRead sets the labels of the samples of read r.
func (b *pprofBuilder) startRead(r storage.Query) {
	b.epoch = -1
	if len(r.Epochs) == 1 {
		b.epoch = int64(r.Epochs[0])
	}
	if !b.q.ByHost && len(r.Hosts) == 1 {
		b.host = r.Hosts[0]
	}
}

type pprofBuilder struct {
	syms  *symbolize.Symbolizer
	q     PprofQuery
	colOf [256]int
	cols  []uint8

	images  map[wire.ImageKey]*pprofImage
	samples map[pprofSampleKey]*profile.Sample // by host only

	// Slabs: a fleet profile has a location and a sample per instruction
	// with samples (500,000 in fleetdbtest's roll-up), allocated in chunks.
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

	frames []symbolize.SourceFrame // scratch for sourceLines

	stacks pprofStacks // samples by call stack (pprof_stacks.go)
}

type pprofImage struct {
	table   *symbolize.Table
	skip    bool
	kernel  bool
	mapping *profile.Mapping
	samples uint64                 // every event's, to order the mappings
	source  *symbolize.ImageSource // nil: no bytes or no DWARF
	funcs   map[pprofFuncKey]*profile.Function
	locs    map[uint64]*pprofLoc // by offset, beyond dense
	dense   []*pprofLoc          // by offset/4, for 4-aligned offsets in the text

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

// pprofFuncKey tells pprof functions apart: pprof names a source line by
// its function's file, so a procedure whose lines lie in two files (say an
// included header's) is a function per file.
type pprofFuncKey struct {
	name, system, file string
	line               int
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

func (b *pprofBuilder) image(ctx context.Context, key wire.ImageKey) (*pprofImage, error) {
	if im, ok := b.images[key]; ok {
		return im, nil
	}
	t, err := b.syms.Table(ctx, key)
	if err != nil {
		return nil, err
	}
	im := &pprofImage{table: t, skip: !analysis.MatchImagePath(b.q.ImagePaths, t.Path), kernel: t.Base >= elfimage.UserAddrLimit,
		funcs: map[pprofFuncKey]*profile.Function{}, locs: map[uint64]*pprofLoc{}}
	b.images[key] = im
	if im.skip {
		return im, nil
	}
	b.mapImage(ctx, im, key)
	return im, nil
}

// mapImage gives im its Mapping: its text's range, dense location slots,
// and its DWARF when q.Files finds the bytes.
func (b *pprofBuilder) mapImage(ctx context.Context, im *pprofImage, key wire.ImageKey) {
	t := im.table
	buildID := key.String()
	if key.Kind() == wire.KindBuildID {
		buildID = hex.EncodeToString(key.ID())
	}
	im.mapping = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), Start: t.Base, Limit: t.Base + 1, File: t.Path,
		BuildID: buildID, HasFunctions: true}
	b.p.Mapping = append(b.p.Mapping, im.mapping)
	rec, err := b.syms.Image(ctx, key)
	if err != nil {
		return // symbols only (the symbolize.Symbolizer's empty table)
	}
	im.mapping.Limit = max(im.mapping.Limit, rec.TextEnd)
	// Instructions lie in the text: a slot per instruction there
	// (offsets past it, rare, go to the map).
	if n := (rec.TextEnd - t.Base) / 4; rec.TextEnd > t.Base && n <= 1<<20 {
		im.dense = make([]*pprofLoc, n)
	}
	if b.q.Files != nil {
		b.openSource(ctx, im, rec)
	}
}

// openSource reads the DWARF of rec's image when q.Files finds its bytes,
// and takes the mapping's range and file offset from the segment holding
// the text, as /proc/PID/maps would show it: pprof computes an address's
// place in the file as address - Start + Offset. An image whose bytes are
// missing, or whose DWARF is damaged, keeps what the record says.
func (b *pprofBuilder) openSource(ctx context.Context, im *pprofImage, rec *wire.ImageRecord) {
	data, where, err := b.q.Files.FindImage(ctx, rec)
	if err != nil {
		return
	}
	// A real machine's image (dcpi profile --linux) has its offsets from
	// file offset 0 already: only its DWARF is read.
	f, err := symbolize.OpenImageFile(rec, data, where)
	if err != nil {
		if _, native, nerr := symbolize.OpenNativeFile(rec, data, where); !native || nerr != nil {
			return
		}
	}
	if b.q.Found != nil {
		b.q.Found(rec, data, where)
	}
	if f != nil {
		if seg, ok := f.ELF.SegmentFor(rec.TextStart); ok && seg.Flags&elfimage.PermX != 0 && seg.Vaddr <= im.mapping.Start {
			m := im.mapping
			m.Start, m.Limit, m.Offset = seg.Vaddr, max(m.Limit, seg.End()), seg.Offset
		}
	}
	src, err := symbolize.ReadImageSource(data)
	if !src.HasLines() {
		return
	}
	im.source = src
	im.mapping.HasFilenames, im.mapping.HasLineNumbers = true, true
	im.mapping.HasInlineFrames = err == nil
}

// function returns the Function of the procedure covering offset in im,
// by its symbol.
func (b *pprofBuilder) function(im *pprofImage, offset uint64) *profile.Function {
	if im.lastFn != nil && offset >= im.from && offset < im.until {
		return im.lastFn
	}
	name := symbolize.UnknownProcedure
	sym, until, ok := im.table.LookupRun(offset)
	if ok {
		name = sym.Name
	}
	fn := b.functionNamed(im, pprofFuncKey{name: name, system: name})
	im.from, im.until, im.lastFn = offset, until, fn
	return fn
}

func (b *pprofBuilder) functionNamed(im *pprofImage, k pprofFuncKey) *profile.Function {
	fn, ok := im.funcs[k]
	if !ok {
		fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: k.name, SystemName: k.system, Filename: k.file, StartLine: int64(k.line)}
		b.p.Function = append(b.p.Function, fn)
		im.funcs[k] = fn
	}
	return fn
}

// sourceLines are the Lines of the instruction at offset in im from its
// DWARF, innermost frame first (see Pprof); nil where DWARF says nothing.
func (b *pprofBuilder) sourceLines(im *pprofImage, offset uint64) []profile.Line {
	b.frames = im.source.Frames(im.table.Base+offset, b.frames[:0])
	if len(b.frames) == 0 {
		return nil
	}
	lines := b.lines(len(b.frames))
	for i, fr := range b.frames {
		k := pprofFuncKey{file: fr.File}
		if fr.Func != nil {
			k.name = cmp.Or(fr.Func.Name, fr.Func.Linkage)
			k.system = cmp.Or(fr.Func.Linkage, k.name)
			if k.file == "" || k.file == fr.Func.File {
				k.file, k.line = fr.Func.File, fr.Func.Line
			}
		}
		if i == len(b.frames)-1 {
			// The outermost frame is the procedure dcpi prof names,
			// by its symbol (a clone such as quick.constprop.0 keeps
			// its suffix), unless no symbol covers it.
			if sym := b.function(im, offset); sym.Name != symbolize.UnknownProcedure || k.name == "" {
				k.name, k.system = sym.Name, sym.SystemName
			}
		}
		if k.name == "" {
			k.name, k.system = symbolize.UnknownProcedure, symbolize.UnknownProcedure
		}
		lines[i] = profile.Line{Function: b.functionNamed(im, k), Line: int64(fr.Line)}
	}
	return lines
}

// lines returns n Lines from the slab.
func (b *pprofBuilder) lines(n int) []profile.Line {
	if len(b.lineSlab) < n {
		b.lineSlab = make([]profile.Line, max(pprofSlab, n))
	}
	l := b.lineSlab[:n:n]
	b.lineSlab = b.lineSlab[n:]
	return l
}

func (b *pprofBuilder) add(ctx context.Context, image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error {
	im := b.last
	if im == nil || image != b.lastKey {
		var err error
		if im, err = b.image(ctx, image); err != nil {
			return err
		}
		b.lastKey, b.last = image, im
	}
	if im.skip || count == 0 {
		return nil
	}
	im.samples += count
	col := b.colOf[event]
	if col < 0 {
		col = b.addColumn(event)
	}
	pl := b.location(im, offset)
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
	addValue(s, col, count)
	return nil
}

// addValue adds count to column col of s.
func addValue(s *profile.Sample, col int, count uint64) {
	for len(s.Value) <= col {
		s.Value = append(s.Value, 0)
	}
	// pprof values are int64; a count past 2^63-1 (never, in practice)
	// saturates there.
	s.Value[col] = int64(min(uint64(s.Value[col])+min(count, 1<<63-1), 1<<63-1))
}

// location returns the location of offset in im, making it.
func (b *pprofBuilder) location(im *pprofImage, offset uint64) *pprofLoc {
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
			b.locSlab = make([]profile.Location, pprofSlab)
		}
		loc := &b.locSlab[0]
		b.locSlab = b.locSlab[1:]
		var line []profile.Line
		if im.source != nil {
			line = b.sourceLines(im, offset)
		}
		if line == nil {
			line = b.lines(1)
			line[0] = profile.Line{Function: b.function(im, offset)}
		}
		addr := im.table.Base + offset
		*loc = profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: im.mapping, Address: addr, Line: line}
		if addr >= im.mapping.Limit {
			im.mapping.Limit = addr + 1
		}
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
	return pl
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
	// Each column of samples becomes its event's estimate (when the
	// event has a period) and its samples.
	type out struct {
		col    int
		period int64 // 0: the samples themselves
	}
	var outs []out
	for c, e := range b.cols {
		name := analysis.EventName(e)
		n := b.q.Periods[e]
		if n == 0 {
			p.SampleType = append(p.SampleType, &profile.ValueType{Type: name, Unit: "samples"})
			outs = append(outs, out{c, 0})
			continue
		}
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: name, Unit: "count"},
			&profile.ValueType{Type: name + "_samples", Unit: "count"})
		outs = append(outs, out{c, n}, out{c, 0})
	}
	if len(outs) == len(b.cols) {
		// No estimates: the columns are the sample types; pad the
		// samples read before a later column appeared.
		for _, s := range p.Sample {
			for len(s.Value) < len(b.cols) {
				s.Value = append(s.Value, 0)
			}
		}
		outs = nil
	}
	var slab []int64
	for _, s := range p.Sample {
		if outs == nil {
			break // no estimates
		}
		if len(slab) < len(outs) {
			slab = make([]int64, len(outs)*pprofSlab)
		}
		v := slab[:len(outs):len(outs)]
		slab = slab[len(outs):]
		for i, o := range outs {
			if o.col >= len(s.Value) {
				continue
			}
			v[i] = s.Value[o.col]
			if o.period > 0 {
				v[i] = mulSaturate(v[i], o.period)
			}
		}
		s.Value = v
	}
	if len(b.cols) > 0 {
		// The first type is the first event's estimate when it has a
		// period (the profile then counts events, one sample per
		// Period of them), else its samples.
		p.DefaultSampleType = p.SampleType[0].Type
		p.PeriodType = &profile.ValueType{Type: p.SampleType[0].Type, Unit: p.SampleType[0].Unit}
		p.Period = max(b.q.Periods[b.cols[0]], 1)
	}
	b.orderMappings()
	p.Comments = []string{"dcpi: samples of the simulated 21164's performance counters, per instruction"}
	return p
}

// orderMappings puts the user images first, by samples, and the kernel
// last: pprof names a profile after its first mapping, the main binary.
func (b *pprofBuilder) orderMappings() {
	by := make(map[*profile.Mapping]*pprofImage, len(b.images))
	for _, im := range b.images {
		if im.mapping != nil {
			by[im.mapping] = im
		}
	}
	slices.SortStableFunc(b.p.Mapping, func(x, y *profile.Mapping) int {
		a, c := by[x], by[y]
		if a.kernel != c.kernel {
			if a.kernel {
				return 1
			}
			return -1
		}
		return cmp.Compare(c.samples, a.samples)
	})
	for i, m := range b.p.Mapping {
		m.ID = uint64(i + 1)
	}
}

// mulSaturate is a*b for a, b >= 0, saturating at 2^63-1.
func mulSaturate(a, b int64) int64 {
	if a != 0 && b > (1<<63-1)/a {
		return 1<<63 - 1
	}
	return a * b
}

// SampleTypes names p's sample types, in order (for
// profiledb.Periods.Check).
func SampleTypes(p *profile.Profile) []string {
	types := make([]string, len(p.SampleType))
	for i, st := range p.SampleType {
		types[i] = st.Type
	}
	return types
}
