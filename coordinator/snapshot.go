package coordinator

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"

	"dcpi/storage"
)

// Snapshots are Pebble checkpoints (hard links of the immutable files, so
// taking one is cheap and does not hold up Apply), shipped as a tar stream.

// Snapshot implements raft.FSM: it checkpoints the database as of the last
// applied entry; Persist streams the checkpoint.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	tmp, err := os.MkdirTemp(f.dir, "snap-")
	if err != nil {
		return nil, fmt.Errorf("coordinator: snapshot: %w", err)
	}
	cp := filepath.Join(tmp, "db")
	if err := f.DB().Checkpoint(cp); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("coordinator: snapshot: %w", err)
	}
	return &fsmSnapshot{dir: tmp, db: cp}, nil
}

type fsmSnapshot struct{ dir, db string }

// Persist writes the checkpoint as a tar stream into sink.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeTar(sink, s.db); err != nil {
		sink.Cancel()
		return fmt.Errorf("coordinator: persist snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("coordinator: persist snapshot: %w", err)
	}
	return nil
}

// Release removes the checkpoint.
func (s *fsmSnapshot) Release() { os.RemoveAll(s.dir) }

// Restore implements raft.FSM: it unpacks the snapshot into a new
// generation directory beside the live one, opens it, points CURRENT at it,
// swaps it in for readers, and closes and removes the old one.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	gen := f.gen + 1
	dir := genDir(f.dir, gen)
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	os.RemoveAll(dir)
	if err := readTar(rc, tmp); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("coordinator: restore: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("coordinator: restore: %w", err)
	}
	db, err := storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("coordinator: restore: %w", err)
	}
	idx, err := db.LogIndex()
	if err == nil {
		err = writeCurrent(f.dir, gen)
	}
	if err != nil {
		db.Close()
		os.RemoveAll(dir)
		return fmt.Errorf("coordinator: restore: %w", err)
	}
	f.mu.Lock()
	old, oldGen := f.db, f.gen
	f.db, f.gen, f.applied = db, gen, idx
	f.mu.Unlock()
	f.metaVersion.Add(1)
	if err := old.Close(); err != nil {
		f.logf("coordinator: restore: close the replaced database: %v", err)
	}
	os.RemoveAll(genDir(f.dir, oldGen))
	f.logf("coordinator: restored snapshot at log index %d (generation %d)", idx, gen)
	return nil
}

// writeTar writes the regular files and directories under dir.
func writeTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return fmt.Errorf("%s: not a regular file or directory", path)
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.Copy(tw, f)
		if err == nil && n != info.Size() {
			err = fmt.Errorf("%s: changed while copying", path)
		}
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// maxSnapshotFile bounds one file of a snapshot: far above any file of a
// Pebble checkpoint (tables, logs, manifests), and a refusal, not a disk
// filled, for an entry that claims more.
const maxSnapshotFile = 4 << 30

// readTar unpacks a snapshot into dir (which it creates), accepting only
// local paths, regular files and directories: a snapshot comes from another
// replica over the network.
func readTar(r io.Reader, dir string) error {
	return unpackTar(r, dir, maxSnapshotFile, true)
}

// unpackTar is readTar with the largest file it accepts, and whether it
// syncs what it wrote (FuzzReadTar unpacks thousands of tars a second).
// It refuses sparse entries (a PAX GNU.sparse header): a few bytes of tar
// would otherwise write a file of any size, its holes as zeros; dcpi's
// snapshots have none. What it writes is never more than the stream it
// read.
func unpackTar(r io.Reader, dir string, maxFile int64, sync bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read snapshot: %w", err)
		}
		name := filepath.FromSlash(hdr.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("snapshot entry %q: not a local path", hdr.Name)
		}
		for k := range hdr.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse.") {
				return fmt.Errorf("snapshot entry %q: a sparse file", hdr.Name)
			}
		}
		path := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if hdr.Size < 0 || hdr.Size > maxFile {
				return fmt.Errorf("snapshot entry %q: %d bytes, more than a snapshot's file holds (%d)", hdr.Name, hdr.Size, maxFile)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			_, err = io.CopyN(f, tr, hdr.Size)
			if err == nil && sync {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("snapshot entry %q: %w", hdr.Name, err)
			}
		default:
			return fmt.Errorf("snapshot entry %q: type %c not allowed", hdr.Name, hdr.Typeflag)
		}
	}
	if !sync {
		return nil
	}
	return syncFile(dir)
}
