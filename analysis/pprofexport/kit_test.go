package pprofexport

import (
	"dcpi/analysis/internal/analysistest"
	"dcpi/analysis/internal/findertest"
)

// The fixtures this package's tests share with the other analysis
// packages' (analysis/internal/analysistest).
var (
	testKey   = analysistest.Key
	elfRecord = analysistest.ELFRecord
	fixture   = analysistest.Fleet
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
