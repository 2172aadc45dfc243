// Package findertest holds the image finders the analysis packages' tests
// share (a test kit, apart from analysistest so that symbolize's own
// tests can use that one).
package findertest

import (
	"context"
	"fmt"
	"path"

	"dcpi/analysis/symbolize"
	"dcpi/hwsim/vmunix"
	"dcpi/wire"
	"dcpi/workloads"
)

// EmbeddedFinder finds images among the binaries embedded in dcpi, as the
// command's finder does first.
type EmbeddedFinder struct{}

// FindImage finds vmunix and the workloads.
func (EmbeddedFinder) FindImage(_ context.Context, rec *wire.ImageRecord) ([]byte, string, error) {
	if rec.Path == vmunix.Path {
		return vmunix.Image(), "embedded " + rec.Path, nil
	}
	if b, err := workloads.Binary(path.Base(rec.Path)); err == nil {
		return b, "embedded " + rec.Path, nil
	}
	return nil, "", fmt.Errorf("%s: %w", rec.Path, symbolize.ErrNoImageFile)
}

// BytesFinder finds every image in its bytes.
type BytesFinder []byte

// FindImage returns b.
func (b BytesFinder) FindImage(context.Context, *wire.ImageRecord) ([]byte, string, error) {
	return b, "test bytes", nil
}

// FindNothing finds no image.
type FindNothing struct{}

// FindImage fails with symbolize.ErrNoImageFile.
func (FindNothing) FindImage(_ context.Context, rec *wire.ImageRecord) ([]byte, string, error) {
	return nil, "", fmt.Errorf("%s: %w", rec.Path, symbolize.ErrNoImageFile)
}
