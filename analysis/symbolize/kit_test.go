package symbolize

import (
	"dcpi/analysis/internal/analysistest"
)

// The fixtures this package's tests share with the other analysis
// packages' (analysis/internal/analysistest).
var (
	testKey   = analysistest.Key
	rec       = analysistest.Rec
	sym       = analysistest.Sym
	elfRecord = analysistest.ELFRecord
)

const (
	base     = analysistest.Base
	evCycles = analysistest.EvCycles
	evIMiss  = analysistest.EvIMiss
	evDMiss  = analysistest.EvDMiss
)
