package coordinator

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"dcpi/wire"
)

// fuzzMaxFile is the largest file FuzzReadTar lets a tar unpack.
const fuzzMaxFile = 1 << 16

// FuzzReadTar feeds the snapshot unpacker (a Raft snapshot's tar, from
// whichever replica the leader is) arbitrary streams, into a directory
// inside a temporary root: whatever it accepts or refuses, everything it
// wrote is a directory or regular file inside its target directory, no
// file is larger than the limit, and it wrote no more bytes than the
// stream held (no sparse expansion).
func FuzzReadTar(f *testing.F) {
	f.Add(snapshotTar(f))
	f.Add(tarOf(f, []tar.Header{{Name: "db/", Typeflag: tar.TypeDir, Mode: 0o755}, {Name: "db/000001.log", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3}}, "abc"))
	f.Add(tarOf(f, []tar.Header{{Name: "../escape", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}}, "x"))
	f.Add(tarOf(f, []tar.Header{{Name: "/abs", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}}, "x"))
	f.Add(tarOf(f, []tar.Header{{Name: "a/../../b", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}}, "x"))
	f.Add(tarOf(f, []tar.Header{{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc"}}, ""))
	f.Add(tarOf(f, []tar.Header{{Name: "hard", Typeflag: tar.TypeLink, Linkname: "../x"}}, ""))
	f.Add(tarOf(f, []tar.Header{{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}, {Name: "f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}}, "xy"))
	f.Add(sparseTar(f, 1<<40))
	f.Add(sparseTar(f, 60000))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, "snap")
		err := unpackTar(bytes.NewReader(data), dir, fuzzMaxFile, false)
		var total int64
		werr := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path == root {
				return nil
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil || !filepath.IsLocal(rel) && rel != "." {
				return fmt.Errorf("%s written outside %s", path, dir)
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			switch {
			case info.IsDir():
			case info.Mode().IsRegular():
				if info.Size() > fuzzMaxFile {
					return fmt.Errorf("%s: %d bytes, more than the limit %d", path, info.Size(), fuzzMaxFile)
				}
				total += info.Size()
			default:
				return fmt.Errorf("%s: mode %v, neither a directory nor a regular file", path, info.Mode())
			}
			return nil
		})
		if werr != nil {
			t.Fatalf("unpacked with error %v: %v", err, werr)
		}
		if total > int64(len(data)) {
			t.Fatalf("%d bytes of tar unpacked to %d bytes of files (error %v)", len(data), total, err)
		}
	})
}

// snapshotTar is a real snapshot stream: a replica's checkpoint of a
// database with a node, an epoch and some samples.
func snapshotTar(tb testing.TB) []byte {
	fsm := openTestFSM(tb)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, c := range []Command{&StartEpochs{At: at}, &RegisterNode{Host: "h0", CPUs: 2, At: at}, &Ingest{Images: []*wire.ImageRecord{imageRec(1)}}} {
		mustApply(tb, fsm, uint64(i+1), c)
	}
	snap, err := fsm.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		tb.Fatal(err)
	}
	return sink.Bytes()
}

// tarOf writes headers, each followed by its Size bytes of body.
func tarOf(tb testing.TB, hdrs []tar.Header, body string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if err := tw.WriteHeader(&h); err != nil {
			tb.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(body[:h.Size]))
			body = body[h.Size:]
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// sparseTar is a PAX sparse file (format 0.1) of size bytes, one byte of
// it data: archive/tar expands the holes, so without the unpacker's
// refusal a 3 KB stream writes size bytes.
func sparseTar(tb testing.TB, size int64) []byte {
	var recs string
	for _, kv := range [][2]string{{"GNU.sparse.major", "0"}, {"GNU.sparse.minor", "1"}, {"GNU.sparse.size", strconv.FormatInt(size, 10)},
		{"GNU.sparse.numblocks", "1"}, {"GNU.sparse.map", strconv.FormatInt(size-1, 10) + ",1"}} {
		rec := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(rec)
		for len(strconv.Itoa(n)+rec) != n {
			n = len(strconv.Itoa(n) + rec)
		}
		recs += strconv.Itoa(n) + rec
	}
	// archive/tar will not write a PAX header by hand: write it as a
	// regular file and retype it.
	b := tarOf(tb, []tar.Header{{Name: "PaxHeaders/f", Typeflag: tar.TypeReg, Size: int64(len(recs)), Format: tar.FormatUSTAR},
		{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1, Format: tar.FormatUSTAR}}, recs+"x")
	h := b[:512]
	h[156] = tar.TypeXHeader
	copy(h[148:156], strings.Repeat(" ", 8))
	sum := 0
	for _, c := range h {
		sum += int(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// TestReadTarRefusesSparse: a sparse entry is refused, not expanded;
// an entry larger than the limit is refused before anything is written.
func TestReadTarRefusesSparse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	if err := readTar(bytes.NewReader(sparseTar(t, 1<<40)), dir); err == nil || !strings.Contains(err.Error(), "sparse") {
		t.Fatalf("sparse entry: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); !os.IsNotExist(err) {
		t.Errorf("sparse entry written: %v", err)
	}
	big := tarOf(t, []tar.Header{{Name: "big", Typeflag: tar.TypeReg, Mode: 0o644, Size: 10}}, "0123456789")
	if err := unpackTar(bytes.NewReader(big), dir, 9, false); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("oversized entry: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "big")); !os.IsNotExist(err) {
		t.Errorf("oversized entry written: %v", err)
	}
}
