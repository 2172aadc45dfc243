package oracle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"dcpi/analysis/cct"
	"dcpi/analysis/paths"
)

// The saved ground truth (dcpi pp oracle --save): one JSON object
//
//	{"format":"dcpi-pp-oracle","version":1,"source":"hwsim-oracle",
//	 "paths":<paths.Profile encoding>,
//	 "cct":[{"path":P,"id":ID,"tree":<cct.Tree encoding>}, ...]}
//
// with the trees in image path order (metrics: calls, instructions,
// cycles; path counts per record). It is ground truth from the simulator,
// for comparing an instrumented profile against.
const (
	savedFormat  = "dcpi-pp-oracle"
	savedVersion = 1
)

// Saved is a decoded save file.
type Saved struct {
	Paths *paths.Profile
	Trees []SavedTree
}

// SavedTree is one image's calling context tree.
type SavedTree struct {
	Path, ID string
	Tree     *cct.Tree
}

type encSaved struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Source  string          `json:"source"`
	Paths   json.RawMessage `json:"paths"`
	CCT     []encSavedTree  `json:"cct"`
}

type encSavedTree struct {
	Path string          `json:"path"`
	ID   string          `json:"id"`
	Tree json.RawMessage `json:"tree"`
}

// WriteSaved writes o's path profile and trees; the same run always gives
// the same bytes.
func (o *Oracle) WriteSaved(w io.Writer) error {
	var pb bytes.Buffer
	if err := o.PathProfile().Encode(&pb); err != nil {
		return err
	}
	e := encSaved{Format: savedFormat, Version: savedVersion, Source: paths.OracleSource, Paths: bytes.TrimSpace(pb.Bytes()), CCT: []encSavedTree{}}
	for _, path := range o.ImagePaths() {
		im := o.Images[path]
		tb, err := im.Tree.MarshalJSON()
		if err != nil {
			return err
		}
		e.CCT = append(e.CCT, encSavedTree{Path: path, ID: im.ID, Tree: tb})
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ErrBadSave is wrapped by ReadSaved's errors about the file's shape.
var ErrBadSave = errors.New("oracle: bad save file")

// ReadSaved decodes a file WriteSaved wrote, refusing unknown formats,
// versions and fields, trailing data, trees out of path order, and any
// profile or tree its own decoder refuses.
func ReadSaved(data []byte) (*Saved, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e encSaved
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSave, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the object", ErrBadSave)
	}
	if e.Format != savedFormat || e.Version != savedVersion {
		return nil, fmt.Errorf("%w: format %q version %d, want %q %d", ErrBadSave, e.Format, e.Version, savedFormat, savedVersion)
	}
	p, err := paths.DecodeProfile(e.Paths)
	if err != nil {
		return nil, err
	}
	s := &Saved{Paths: p}
	for i, et := range e.CCT {
		if i > 0 && e.CCT[i-1].Path >= et.Path {
			return nil, fmt.Errorf("%w: tree %s out of order or repeated", ErrBadSave, et.Path)
		}
		t, err := cct.Decode(et.Tree)
		if err != nil {
			return nil, fmt.Errorf("%w: tree %s: %v", ErrBadSave, et.Path, err)
		}
		s.Trees = append(s.Trees, SavedTree{Path: et.Path, ID: et.ID, Tree: t})
	}
	return s, nil
}
