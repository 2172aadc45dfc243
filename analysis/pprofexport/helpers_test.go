package pprofexport

// The fixtures below are analysis/report's and analysis/symbolize's test
// fixtures (prof_test.go, symbols_test.go, list_test.go), repeated: an
// in-package test there cannot import this package, nor this one its
// unexported test helpers.
