package paths

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Profile is a path profile: per image, per procedure, how often each
// Ball-Larus path ran and what it cost. Producers: the hwsim oracle
// (ground truth), an instrumented program's dump reader. The encoding is
// how one is compared against the other.
//
// Encoding (version 1): one JSON object
//
//	{"version":1,"source":S,"metrics":[names],"images":[
//	  {"id":ID,"path":P,"procs":[
//	    {"entry":A,"name":N,"num_paths":K,"unknown":U,"paths":[
//	      {"id":I,"count":C,"metrics":[...]}]}]}]}
//
// source says who produced it ("hwsim-oracle" is ground truth, never a
// measurement); id is the image's content identity as hwsim spells it
// ("buildid:<hex>", or "sha256:<hex>" without a build ID); entry is the
// procedure's start address; num_paths its path count under this
// package's numbering (0: the procedure could not be numbered, and then
// paths is empty); unknown the activations whose paths are unknown;
// metrics per path follow the profile's metric names. Images are in
// (id, path) order, procedures by entry, paths by ID, every count at least
// 1: the same profile always encodes to the same bytes.
type Profile struct {
	Source  string // who measured it: OracleSource, or an instrumenter's name
	Metrics []string
	Images  []ImageProfile
}

// OracleSource is the Source of the profiles the simulator's oracle writes
// (analysis/oracle): ground truth, never an instrumented measurement. It
// is named here, with the format, so that a reader of profiles tells truth
// from measurement without linking the simulator.
const OracleSource = "hwsim-oracle"

// ImageProfile is one image's procedures.
type ImageProfile struct {
	ID    string
	Path  string
	Procs []ProcProfile
}

// ProcProfile is one procedure's paths.
type ProcProfile struct {
	Entry    uint64
	Name     string
	NumPaths uint64
	Unknown  uint64
	Paths    []PathCount
}

// PathCount is one path's count and metrics.
type PathCount struct {
	ID      uint64
	Count   uint64
	Metrics []uint64
}

const profileVersion = 1

type encProfile struct {
	Version int        `json:"version"`
	Source  string     `json:"source"`
	Metrics []string   `json:"metrics"`
	Images  []encImage `json:"images"`
}

type encImage struct {
	ID    string    `json:"id"`
	Path  string    `json:"path"`
	Procs []encProc `json:"procs"`
}

type encProc struct {
	Entry    uint64    `json:"entry"`
	Name     string    `json:"name"`
	NumPaths uint64    `json:"num_paths"`
	Unknown  uint64    `json:"unknown,omitempty"`
	Paths    []encPath `json:"paths"`
}

type encPath struct {
	ID      uint64   `json:"id"`
	Count   uint64   `json:"count"`
	Metrics []uint64 `json:"metrics"`
}

// Sort puts p in canonical order (images by ID and path, procedures by
// entry, paths by ID).
func (p *Profile) Sort() {
	slices.SortFunc(p.Images, func(a, b ImageProfile) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	for i := range p.Images {
		im := &p.Images[i]
		slices.SortFunc(im.Procs, func(a, b ProcProfile) int { return cmpU64(a.Entry, b.Entry) })
		for j := range im.Procs {
			slices.SortFunc(im.Procs[j].Paths, func(a, b PathCount) int { return cmpU64(a.ID, b.ID) })
		}
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Encode sorts p, checks it and writes its encoding to w.
func (p *Profile) Encode(w io.Writer) error {
	p.Sort()
	if err := p.Validate(); err != nil {
		return err
	}
	e := encProfile{Version: profileVersion, Source: p.Source, Metrics: p.Metrics, Images: []encImage{}}
	if e.Metrics == nil {
		e.Metrics = []string{}
	}
	for _, im := range p.Images {
		ei := encImage{ID: im.ID, Path: im.Path, Procs: []encProc{}}
		for _, pr := range im.Procs {
			ep := encProc{Entry: pr.Entry, Name: pr.Name, NumPaths: pr.NumPaths, Unknown: pr.Unknown, Paths: []encPath{}}
			for _, pc := range pr.Paths {
				m := pc.Metrics
				if m == nil {
					m = []uint64{}
				}
				ep.Paths = append(ep.Paths, encPath{ID: pc.ID, Count: pc.Count, Metrics: m})
			}
			ei.Procs = append(ei.Procs, ep)
		}
		e.Images = append(e.Images, ei)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ErrBadProfile is wrapped by every error DecodeProfile and Validate
// return.
var ErrBadProfile = errors.New("paths: bad path profile")

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadProfile, fmt.Sprintf(format, a...))
}

// DecodeProfile reads a profile Encode wrote, refusing anything else:
// unknown fields or version, trailing data, and whatever Validate refuses.
func DecodeProfile(data []byte) (*Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e encProfile
	if err := dec.Decode(&e); err != nil {
		return nil, bad("%v", err)
	}
	if dec.More() {
		return nil, bad("data after the profile")
	}
	if e.Version != profileVersion {
		return nil, bad("version %d, want %d", e.Version, profileVersion)
	}
	p := &Profile{Source: e.Source, Metrics: e.Metrics}
	for _, ei := range e.Images {
		im := ImageProfile{ID: ei.ID, Path: ei.Path}
		for _, ep := range ei.Procs {
			pr := ProcProfile{Entry: ep.Entry, Name: ep.Name, NumPaths: ep.NumPaths, Unknown: ep.Unknown}
			for _, x := range ep.Paths {
				pr.Paths = append(pr.Paths, PathCount(x))
			}
			im.Procs = append(im.Procs, pr)
		}
		p.Images = append(p.Images, im)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate checks p is canonical and consistent: a source and unique,
// non-empty metric names; images with an ID, unique and in order;
// procedures in strictly ascending entry order; paths in strictly
// ascending ID order, below num_paths, counted at least once, with one
// value per metric; no paths for a procedure that was not numbered.
func (p *Profile) Validate() error {
	if p.Source == "" {
		return bad("no source")
	}
	for i, m := range p.Metrics {
		if m == "" || slices.Contains(p.Metrics[:i], m) {
			return bad("metric %d: empty or repeated name %q", i, m)
		}
	}
	for i, im := range p.Images {
		if im.ID == "" {
			return bad("image %d (%s): no ID", i, im.Path)
		}
		if i > 0 {
			prev := p.Images[i-1]
			if c := strings.Compare(prev.ID, im.ID); c > 0 || c == 0 && prev.Path >= im.Path {
				return bad("image %d (%s %s): out of order or repeated", i, im.ID, im.Path)
			}
		}
		for j, pr := range im.Procs {
			if j > 0 && im.Procs[j-1].Entry >= pr.Entry {
				return bad("image %s: procedure %#x out of order or repeated", im.ID, pr.Entry)
			}
			if pr.NumPaths == 0 && len(pr.Paths) > 0 {
				return bad("image %s: procedure %#x: paths counted but not numbered", im.ID, pr.Entry)
			}
			for k, pc := range pr.Paths {
				switch {
				case k > 0 && pr.Paths[k-1].ID >= pc.ID:
					return bad("image %s: procedure %#x: path %d out of order or repeated", im.ID, pr.Entry, pc.ID)
				case pc.ID >= pr.NumPaths:
					return bad("image %s: procedure %#x: path %d out of range (%d paths)", im.ID, pr.Entry, pc.ID, pr.NumPaths)
				case pc.Count == 0:
					return bad("image %s: procedure %#x: path %d counted 0 times", im.ID, pr.Entry, pc.ID)
				case len(pc.Metrics) != len(p.Metrics):
					return bad("image %s: procedure %#x: path %d has %d metrics, want %d", im.ID, pr.Entry, pc.ID, len(pc.Metrics), len(p.Metrics))
				}
			}
		}
	}
	return nil
}
