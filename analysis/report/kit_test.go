package report

import (
	"testing"

	"dcpi/analysis/internal/analysistest"
	"dcpi/analysis/internal/findertest"
)

// The fixtures this package's tests share with the other analysis
// packages' (analysis/internal/analysistest).
var (
	testKey    = analysistest.Key
	elfRecord  = analysistest.ELFRecord
	fixture    = analysistest.Fleet
	sortSource = analysistest.SortSource
)

type (
	embeddedFinder = findertest.EmbeddedFinder
	bytesFinder    = findertest.BytesFinder
	findNothing    = findertest.FindNothing
)

const (
	base     = analysistest.Base
	evCycles = analysistest.EvCycles
	evIMiss  = analysistest.EvIMiss
	evDMiss  = analysistest.EvDMiss
)

func golden(t *testing.T, name string, got []byte) { analysistest.Golden(t, *update, name, got) }
