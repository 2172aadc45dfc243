// Package pathupload turns the path profile files the dcpi pp commands
// save (the oracle's ground truth, an instrumented run's paths or calling
// context tree) into one upload per image (wire.PathUpload), each with an
// upload ID kept beside the file so that uploading it again changes
// nothing, and sends them (dcpi pp upload).
package pathupload

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"dcpi/analysis/cct"
	"dcpi/analysis/fleetpaths"
	"dcpi/analysis/instrument"
	"dcpi/analysis/oracle"
	"dcpi/analysis/paths"
	"dcpi/storage"
	"dcpi/wire"
)

// Sender sends one upload and says what became of it.
type Sender func(*wire.PathUpload) (status string, err error)

// OpenLocal opens (creating if needed) the local profile database at dir
// and returns its LocalSender and the database's close.
func OpenLocal(dir string) (Sender, func(), error) {
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		return nil, nil, err
	}
	return LocalSender(db), func() { db.Close() }, nil
}

// LocalSender applies uploads to a local profile database, by the same
// rule as the coordinator's.
func LocalSender(db *storage.DB) Sender {
	return func(u *wire.PathUpload) (string, error) {
		out, err := db.ApplyPathUpload(u)
		if err != nil {
			return "", err
		}
		if out.Reason != "" {
			return fmt.Sprintf("%s: %s", out.Status, out.Reason), nil
		}
		return out.Status.String(), nil
	}
}

// A reader reads one file format of path profiles into the images to
// upload. ok is false when data is not of its format (the next reader is
// tried). Adding a producer's format (an instrumented run's paths and
// trees) is one more entry in readers.
type reader struct {
	name string
	read func(data []byte) (ims []fleetpaths.Image, ok bool, err error)
}

var readers = []reader{
	{name: "dcpi pp oracle --save", read: readOracleSaveForUpload},
	{name: "dcpi pp counts --save", read: readInstrumentedForUpload},
	{name: "dcpi pp counts --save (cct)", read: readInstrumentedCCTForUpload},
}

// readInstrumentedCCTForUpload reads the tree dcpi pp counts --save wrote
// from a CCT-mode dump: an instrumented run's calling contexts, uploaded
// as instrumented data with no path counts.
func readInstrumentedCCTForUpload(data []byte) ([]fleetpaths.Image, bool, error) {
	if !instrument.IsSavedCCT(data) {
		return nil, false, nil
	}
	id, t, err := instrument.ReadSavedCCT(data)
	if err != nil {
		return nil, true, err
	}
	empty := &paths.Profile{Source: instrument.ProfileSource, Metrics: []string{}, Images: []paths.ImageProfile{}}
	ims, err := fleetpaths.Split(wire.SourceInstrumented, empty, map[string]*cct.Tree{id: t})
	return ims, true, err
}

// readInstrumentedForUpload reads the path profile dcpi pp counts --save
// wrote from a paths-mode dump: an instrumented run's counts, uploaded as
// instrumented data (no calling context tree: paths mode records none).
func readInstrumentedForUpload(data []byte) ([]fleetpaths.Image, bool, error) {
	p, err := paths.DecodeProfile(data)
	if err != nil || p.Source != instrument.ProfileSource {
		return nil, false, nil
	}
	ims, err := fleetpaths.Split(wire.SourceInstrumented, p, nil)
	return ims, true, err
}

// readOracleSaveForUpload reads a dcpi pp oracle --save file: hwsim
// ground truth, uploaded as oracle data.
func readOracleSaveForUpload(data []byte) ([]fleetpaths.Image, bool, error) {
	var head struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(data, &head) != nil || head.Format != "dcpi-pp-oracle" {
		return nil, false, nil
	}
	s, err := oracle.ReadSaved(data)
	if err != nil {
		return nil, true, err
	}
	trees := map[string]*cct.Tree{}
	for _, t := range s.Trees {
		if trees[t.ID] != nil {
			return nil, true, fmt.Errorf("two trees of image %s (%s): upload the images apart", t.ID, t.Path)
		}
		trees[t.ID] = t.Tree
	}
	ims, err := fleetpaths.Split(wire.SourceOracle, s.Paths, trees)
	return ims, true, err
}

// ReadFile reads FILE, a path profile file a dcpi pp command saved, into
// its images' uploads, with the first reader that knows its format.
func ReadFile(name string) ([]fleetpaths.Image, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var known []string
	for _, r := range readers {
		ims, ok, err := r.read(data)
		if !ok {
			known = append(known, r.name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", name, r.name, err)
		}
		return ims, nil
	}
	return nil, fmt.Errorf("%s: not a path profile file this build reads (%s)", name, strings.Join(known, ", "))
}

// uploadIDs are the upload IDs of a file's images, kept beside it in
// FILE.upload-ids ("<image key> <id>" a line) so that uploading it again,
// after a failure or not, sends the same IDs and the fleet counts it once.
type uploadIDs struct {
	path string
	ids  map[wire.ImageKey]wire.UploadID
}

func loadUploadIDs(file string) (*uploadIDs, error) {
	u := &uploadIDs{path: file + ".upload-ids", ids: map[wire.ImageKey]wire.UploadID{}}
	f, err := os.Open(u.path)
	if errors.Is(err, os.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := u.read(f); err != nil {
		return nil, err
	}
	return u, nil
}

// read reads the "<image key> <upload ID>" lines of r into u.
func (u *uploadIDs) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		k, id, ok := strings.Cut(sc.Text(), " ")
		key, err1 := wire.ParseImageKey(k)
		uid, err2 := wire.ParseUploadID(id)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("%s:%d: want \"<image key> <upload ID>\" (delete the file to upload the profile as a new run)", u.path, n)
		}
		u.ids[key] = uid
	}
	return sc.Err()
}

// get returns the image's ID, choosing a new random one if it has none.
func (u *uploadIDs) get(key wire.ImageKey) (wire.UploadID, bool, error) {
	if id, ok := u.ids[key]; ok {
		return id, false, nil
	}
	var id wire.UploadID
	for id.IsZero() {
		if _, err := rand.Read(id[:]); err != nil {
			return id, false, err
		}
	}
	u.ids[key] = id
	return id, true, nil
}

// save writes the IDs (through a temporary file, so a crash leaves the old
// or the new list).
func (u *uploadIDs) save() error {
	keys := make([]wire.ImageKey, 0, len(u.ids))
	for k := range u.ids {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, wire.ImageKey.Compare)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", k, u.ids[k])
	}
	tmp := u.path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, u.path)
}

// Options is one dcpi pp upload: the files, the host whose measurements
// they are, and where each upload goes.
type Options struct {
	Files []string
	Host  string
	Send  Sender
}

// UploadFiles uploads each file in turn (Upload), stopping at the first
// that fails or when ctx is done; the files before it stay uploaded, and
// running it again resends their IDs, which changes nothing.
func UploadFiles(ctx context.Context, w io.Writer, opt Options) error {
	for _, file := range opt.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := Upload(w, file, opt.Host, opt.Send); err != nil {
			return err
		}
	}
	return nil
}

// Upload sends each image of FILE as host's upload, through send, with
// the IDs kept beside FILE (chosen, and kept, before anything is sent, so
// a retry resends the same IDs and the fleet counts FILE once), and
// writes a line per image saying what became of it.
func Upload(w io.Writer, file, host string, send Sender) error {
	ims, err := ReadFile(file)
	if err != nil {
		return err
	}
	ids, err := loadUploadIDs(file)
	if err != nil {
		return err
	}
	var ups []*wire.PathUpload
	fresh := false
	for i := range ims {
		id, isNew, err := ids.get(ims[i].Key)
		if err != nil {
			return err
		}
		fresh = fresh || isNew
		u, err := ims[i].Upload(host, id)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		ups = append(ups, u)
	}
	// The IDs are kept before anything is sent: a retry resends them.
	if fresh {
		if err := ids.save(); err != nil {
			return fmt.Errorf("%s: keeping the upload IDs: %w", file, err)
		}
	}
	for _, u := range ups {
		st, err := send(u)
		if err != nil {
			return fmt.Errorf("%s: %s: %w (run the upload again: it resends the same IDs)", file, u.Image, err)
		}
		paths, nodes := 0, len(u.Profile.Tree)
		for _, p := range u.Profile.Procs {
			paths += len(p.Paths)
		}
		fmt.Fprintf(w, "%s %s (%s) %s as %s/%s: %d procedures, %d paths, %d contexts: %s\n",
			file, cmp.Or(u.Profile.ImagePath, "?"), u.Image, u.Source, u.Host, u.ID, len(u.Profile.Procs), paths, max(nodes-1, 0), st)
	}
	return nil
}
