package imagefind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis/symbolize"
	"dcpi/wire"
	"dcpi/workloads"
)

// TestFinder checks where the tools look for an image's bytes and
// that it refuses another build's.
func TestFinder(t *testing.T) {
	sortBytes, _ := workloads.Binary("sort")
	key, _, err := symbolize.ImageKeyOf(sortBytes, "sort")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Under --image-dir by file name, for a path that is not embedded.
	os.WriteFile(filepath.Join(dir, "mysort"), sortBytes, 0o644)
	rec := &wire.ImageRecord{Key: key, Path: "/opt/bin/mysort"}
	if _, where, err := New(nil, nil, []string{dir}).FindImage(t.Context(), rec); err != nil || where != filepath.Join(dir, "mysort") {
		t.Errorf("found at %q: %v", where, err)
	}
	// Embedded first.
	rec.Path = "/bin/sort"
	if _, where, err := New(nil, nil, nil).FindImage(t.Context(), rec); err != nil || where != "embedded /bin/sort" {
		t.Errorf("found at %q: %v", where, err)
	}
	// Another build at the path: refused, naming both keys. (Its own
	// directory: under dir, mysort has the record's build ID.)
	other, _ := workloads.Binary("hashdb")
	otherDir := t.TempDir()
	os.WriteFile(filepath.Join(otherDir, "app"), other, 0o644)
	rec.Path = "/srv/app"
	_, _, err = New(nil, nil, []string{otherDir}).FindImage(t.Context(), rec)
	if !errors.Is(err, symbolize.ErrImageMismatch) || !strings.Contains(err.Error(), key.String()) {
		t.Errorf("err %v", err)
	}
	// Nothing anywhere.
	_, _, err = New(nil, nil, nil).FindImage(t.Context(), &wire.ImageRecord{Key: key, Path: "/nowhere/x"})
	if !errors.Is(err, symbolize.ErrNoImageFile) || !strings.Contains(err.Error(), "--image-dir") {
		t.Errorf("err %v", err)
	}
}

// TestFinderUploads: a file the cluster holds is found there, and one
// never uploaded is said so.
func TestFinderUploads(t *testing.T) {
	sortBytes, _ := workloads.Binary("sort")
	key, _, err := symbolize.ImageKeyOf(sortBytes, "sort")
	if err != nil {
		t.Fatal(err)
	}
	rec := &wire.ImageRecord{Key: key, Path: "/home/me/sort"}
	up := func(_ context.Context, k wire.ImageKey) ([]byte, error) {
		if k == key {
			return sortBytes, nil
		}
		return nil, fmt.Errorf("fetch %v: %w", k, ErrNotUploaded)
	}
	if _, where, err := New(nil, up, nil).FindImage(t.Context(), rec); err != nil || where != whereUploaded {
		t.Errorf("found at %q: %v", where, err)
	}
	rec.Key[0] ^= 1
	if _, _, err := New(nil, up, nil).FindImage(t.Context(), rec); !errors.Is(err, symbolize.ErrNoImageFile) || !strings.Contains(err.Error(), "no upload in the cluster") {
		t.Errorf("err %v", err)
	}
}
