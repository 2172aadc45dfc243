// Package imagefind finds the bytes of a profiled image for the analysis
// tools, by content key: among the binaries embedded in dcpi, at the path
// the image record carries, under the user's image directories, and in
// the cluster's upload of the user's programs. A file of another build is
// never used. It is symbolization's first step: the symbols, lines and
// instructions of an image come from the file it finds.
package imagefind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"dcpi/analysis/symbolize"
	"dcpi/hwsim/sysroot"
	"dcpi/hwsim/vmunix"
	"dcpi/wire"
	"dcpi/workloads"
)

// maxImageBytes bounds a file read from an image directory (a simulated
// host loads programs up to this size).
const maxImageBytes = 256 << 20

// whereUploaded is where an image found in the cluster's upload came from.
const whereUploaded = "the copy uploaded to the cluster"

// Finder finds an image's bytes for the analysis tools, by content
// key (build ID, or SHA-256), looking in turn:
//
//  1. among the binaries embedded in dcpi (the workloads under /bin/NAME,
//     and /vmunix), which the simulated hosts run;
//  2. at the path the image record carries: where the node found the
//     file (a user's program is recorded under its absolute path);
//  3. under each --image-dir DIR: DIR/PATH, DIR/NAME, then every file of
//     DIR whose content key is the record's;
//  4. in the cluster's upload of the user's programs (--nats).
//
// The first file whose content key is the record's wins; a file of
// another build is never used. It says on log which one it used, once
// per image.
type Finder struct {
	dirs []string
	// uploaded fetches the file a node uploaded (nil: no cluster).
	uploaded func(context.Context, wire.ImageKey) ([]byte, error)
	// log receives a line per image found (nil: silent).
	log io.Writer
	// state is shared by the finder's copies (nil: nothing remembered).
	state *finderState
}

// finderState is what a finder remembers across images: which it has
// reported, and the content keys of the files under each --image-dir.
type finderState struct {
	mu       sync.Mutex
	reported map[wire.ImageKey]bool
	scanned  map[string][]dirFile // by directory
}

// dirFile is an ELF file under an --image-dir, with its content key.
type dirFile struct {
	path string
	size int64
	key  wire.ImageKey
	err  error // why its key could not be read
	read bool  // key or err is set
}

// New is a finder that looks under dirs and, when uploaded is not nil,
// in the cluster's uploads through it (whose error for a file never
// uploaded wraps ErrNotUploaded); it says on log (nil: silent) which file
// it used, once per image.
func New(log io.Writer, uploaded func(context.Context, wire.ImageKey) ([]byte, error), dirs []string) Finder {
	return Finder{dirs: dirs, log: log, uploaded: uploaded, state: &finderState{}}
}

// ErrNotUploaded is wrapped by an uploaded function's error for a file
// no node uploaded.
var ErrNotUploaded = errors.New("no upload in the cluster")

func (f Finder) FindImage(ctx context.Context, rec *wire.ImageRecord) ([]byte, string, error) {
	var tried []string
	mismatch := false
	try := func(data []byte, where string) bool {
		k, _, err := symbolize.ImageKeyOf(data, where)
		switch {
		case err != nil:
			tried = append(tried, fmt.Sprintf("%s: %v", where, err))
		case k != rec.Key:
			mismatch = true
			tried = append(tried, fmt.Sprintf("%s is %v, another build", where, k))
		default:
			return true
		}
		return false
	}
	found := func(data []byte, where string) ([]byte, string, error) {
		f.report(rec, where)
		return data, where, nil
	}
	if rec.Path == vmunix.Path {
		if try(vmunix.Image(), "embedded "+vmunix.Path) {
			return found(vmunix.Image(), "embedded "+vmunix.Path)
		}
	} else if path.Dir(rec.Path) == workloads.BinDir {
		if b, err := workloads.Binary(path.Base(rec.Path)); err == nil && try(b, "embedded "+rec.Path) {
			return found(b, "embedded "+rec.Path)
		}
	}
	readFile := func(p string) ([]byte, bool) {
		b, err := os.ReadFile(p)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				tried = append(tried, err.Error())
			}
			return nil, false
		}
		return b, true
	}
	paths := []string{rec.Path}
	for _, d := range f.dirs {
		paths = append(paths, filepath.Join(d, filepath.FromSlash(rec.Path)), filepath.Join(d, path.Base(rec.Path)))
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		if b, ok := readFile(p); ok && try(b, p) {
			return found(b, p)
		}
	}
	// A shared object of a dynamically linked program: where the
	// simulated host read it, the cross toolchain's sysroot.
	if b, host, err := (sysroot.Root{Dir: sysroot.Default}).ReadFile(rec.Path); err == nil {
		where := filepath.Join(sysroot.Default, filepath.FromSlash(host))
		if !seen[where] && try(b, where) {
			return found(b, where)
		}
	}
	for _, d := range f.dirs {
		for _, df := range f.scan(d, rec.Size) {
			if seen[df.path] {
				continue
			}
			if df.key == rec.Key {
				if b, ok := readFile(df.path); ok && try(b, df.path) {
					return found(b, df.path)
				}
			}
		}
	}
	if f.uploaded != nil {
		b, err := f.uploaded(ctx, rec.Key)
		switch {
		case err == nil:
			if try(b, whereUploaded) {
				return found(b, whereUploaded)
			}
		case errors.Is(err, ErrNotUploaded):
			tried = append(tried, "no upload in the cluster")
		default:
			tried = append(tried, err.Error())
		}
	}
	why := symbolize.ErrNoImageFile
	if mismatch {
		why = symbolize.ErrImageMismatch
	}
	msg := fmt.Sprintf("no file with content key %v (looked embedded, at %s", rec.Key, rec.Path)
	if len(f.dirs) > 0 {
		msg += " and under " + strings.Join(f.dirs, ", ")
	}
	if f.uploaded != nil {
		msg += ", in the cluster's uploads"
	}
	msg += ")"
	if len(tried) > 0 {
		msg += ": " + strings.Join(tried, "; ")
	}
	switch {
	case mismatch:
		msg += "; rebuilt since it was profiled? give the profiled file's directory with --image-dir DIR"
	case len(f.dirs) == 0:
		msg += "; add --image-dir DIR"
	}
	return nil, "", fmt.Errorf("%s: %w", msg, why)
}

// report says, once per image, which file the tool uses.
func (f Finder) report(rec *wire.ImageRecord, where string) {
	if f.log == nil {
		return
	}
	if f.state != nil {
		f.state.mu.Lock()
		defer f.state.mu.Unlock()
		if f.state.reported == nil {
			f.state.reported = map[wire.ImageKey]bool{}
		}
		if f.state.reported[rec.Key] {
			return
		}
		f.state.reported[rec.Key] = true
	}
	match := "content matches"
	if rec.Key.Kind() == wire.KindBuildID {
		match = "build ID matches"
	}
	if strings.HasPrefix(where, "embedded ") {
		where = "the copy embedded in dcpi"
	}
	fmt.Fprintf(f.log, "image %s: using %s (%s)\n", rec.Path, where, match)
}

// scan returns the regular files of dir that could be an image of size
// bytes (0: any size), with their content keys, reading each file at most
// once per finder.
func (f Finder) scan(dir string, size uint64) []dirFile {
	var files []dirFile
	if f.state != nil {
		f.state.mu.Lock()
		defer f.state.mu.Unlock()
		files = f.state.scanned[dir]
	}
	if files == nil {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil
		}
		for _, e := range ents {
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() || info.Size() > maxImageBytes {
				continue
			}
			files = append(files, dirFile{path: filepath.Join(dir, e.Name()), size: info.Size()})
		}
		if files == nil {
			files = []dirFile{}
		}
		if f.state != nil {
			if f.state.scanned == nil {
				f.state.scanned = map[string][]dirFile{}
			}
			f.state.scanned[dir] = files
		}
	}
	// The record's size is the file's: only files of that size can
	// match, so only they are read and parsed.
	var out []dirFile
	for i := range files {
		df := &files[i]
		if size != 0 && uint64(df.size) != size {
			continue
		}
		if !df.read {
			df.read = true
			if b, err := os.ReadFile(df.path); err != nil {
				df.err = err
			} else {
				df.key, _, df.err = symbolize.ImageKeyOf(b, df.path)
			}
		}
		if df.err == nil {
			out = append(out, *df)
		}
	}
	return out
}

// SourceReader reads a source file named by a line table: at its path,
// then under each directory (DIR/FILE, then DIR/BASENAME).
func SourceReader(dirs []string) func(string) ([]byte, error) {
	return func(file string) ([]byte, error) {
		cands := []string{file}
		for _, d := range dirs {
			cands = append(cands, filepath.Join(d, file), filepath.Join(d, filepath.Base(file)))
		}
		for _, c := range cands {
			if b, err := os.ReadFile(c); err == nil {
				return b, nil
			}
		}
		return nil, fmt.Errorf("source %s: %w", file, os.ErrNotExist)
	}
}
