package pprofexport

import (
	"context"

	"github.com/google/pprof/profile"

	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// pprofStacks is what Pprof keeps to export call stacks: a sample per
// (stack, host, epoch), and the locations that have no image.
type pprofStacks struct {
	rows      int
	samples   map[pprofStackKey]*profile.Sample
	unknown   map[uint64]*profile.Location // frames no image map covered, by address
	truncated *profile.Location
	bare      map[string]*profile.Function // functions of no image
	locs      []*profile.Location          // scratch
}

type pprofStackKey struct {
	id    uint64
	host  string
	epoch int64
}

// addStack adds one stack's count as a multi-frame sample (see Pprof).
func (b *pprofBuilder) addStack(ctx context.Context, st *storage.Stack, event uint8, host string, count uint64) error {
	if count == 0 || len(st.Frames) == 0 {
		return nil
	}
	s := &b.stacks
	leaf := st.Frames[0]
	if leaf.Image.IsZero() && b.q.ImagePaths != nil {
		return nil // no image to select it by
	}
	if !leaf.Image.IsZero() {
		im, err := b.image(ctx, leaf.Image)
		if err != nil {
			return err
		}
		if im.skip {
			return nil // ImagePaths selects stacks by their leaf
		}
		im.samples += count
	}
	s.rows++
	col := b.colOf[event]
	if col < 0 {
		col = b.addColumn(event)
	}
	if !b.q.ByHost {
		host = b.host
	}
	k := pprofStackKey{st.ID, host, b.epoch}
	sample := s.samples[k]
	if sample == nil {
		locs := s.locs[:0]
		for i, f := range st.Frames {
			off := f.Offset
			if i > 0 && off >= 4 {
				off -= 4 // a caller's call site, before its return address
			}
			loc, err := b.frameLocation(ctx, f.Image, off)
			if err != nil {
				return err
			}
			locs = append(locs, loc)
		}
		if st.Truncated {
			locs = append(locs, b.truncatedLocation())
		}
		s.locs = locs
		sample = b.newSample(nil, host)
		sample.Location = append([]*profile.Location(nil), locs...)
		if s.samples == nil {
			s.samples = map[pprofStackKey]*profile.Sample{}
		}
		s.samples[k] = sample
	}
	addValue(sample, col, count)
	return nil
}

// frameLocation is the location of offset in image, or of the raw address
// offset for a frame without an image.
func (b *pprofBuilder) frameLocation(ctx context.Context, image wire.ImageKey, offset uint64) (*profile.Location, error) {
	if image.IsZero() {
		s := &b.stacks
		if loc := s.unknown[offset]; loc != nil {
			return loc, nil
		}
		fn := b.bareFunction(symbolize.UnknownProcedure)
		loc := &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: offset, Line: []profile.Line{{Function: fn}}}
		b.p.Location = append(b.p.Location, loc)
		if s.unknown == nil {
			s.unknown = map[uint64]*profile.Location{}
		}
		s.unknown[offset] = loc
		return loc, nil
	}
	im, err := b.image(ctx, image)
	if err != nil {
		return nil, err
	}
	if im.mapping == nil {
		// A caller in an image ImagePaths did not select: it still
		// needs its mapping and symbols.
		b.mapImage(ctx, im, image)
	}
	return b.location(im, offset).loc, nil
}

// truncatedLocation is the synthetic root of truncated stacks.
func (b *pprofBuilder) truncatedLocation() *profile.Location {
	s := &b.stacks
	if s.truncated == nil {
		s.truncated = &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: b.bareFunction(report.TruncatedRoot)}}}
		b.p.Location = append(b.p.Location, s.truncated)
	}
	return s.truncated
}

// bareFunction is a Function of no image, by name.
func (b *pprofBuilder) bareFunction(name string) *profile.Function {
	s := &b.stacks
	if fn := s.bare[name]; fn != nil {
		return fn
	}
	fn := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name}
	b.p.Function = append(b.p.Function, fn)
	if s.bare == nil {
		s.bare = map[string]*profile.Function{}
	}
	s.bare[name] = fn
	return fn
}
