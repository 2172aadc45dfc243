// Package longtest says whether tests run their long variants: a sweep
// over every workload on every model or CPU count, or a fleet where one
// host would check the same code. CI (make ci) runs a representative
// subset of each sweep to stay within its time; DCPI_LONG=1 (make
// test-long) runs them whole, as before resolving an issue that touches
// what they cover.
package longtest

import (
	"os"
	"slices"
	"testing"
)

// Enabled reports whether DCPI_LONG=1 asks for the long variants.
func Enabled() bool { return os.Getenv("DCPI_LONG") == "1" }

// Keep reports whether the sweep's case name runs: every case with
// Enabled, else only those of subset.
func Keep(name string, subset ...string) bool {
	return Enabled() || slices.Contains(subset, name)
}

// Skip skips t unless the long variants run, saying what covers its
// ground in CI.
func Skip(t testing.TB, coveredBy string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("a long variant (DCPI_LONG=1, make test-long); in CI: %s", coveredBy)
	}
}
