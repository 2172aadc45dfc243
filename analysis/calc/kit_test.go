package calc

import (
	"testing"

	"dcpi/analysis/internal/analysistest"
	"dcpi/analysis/internal/findertest"
)

// The fixtures this package's tests share with the other analysis
// packages' (analysis/internal/analysistest).
var (
	elfRecord  = analysistest.ELFRecord
	sortSource = analysistest.SortSource
)

type (
	embeddedFinder = findertest.EmbeddedFinder
	bytesFinder    = findertest.BytesFinder
)

func golden(t *testing.T, name string, got []byte) { analysistest.Golden(t, *update, name, got) }
