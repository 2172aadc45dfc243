//go:build race

package simhost_test

// raceEnabled: the race detector is on. Tests that only check the
// simulator's numbers single-threaded (the oracle comparison) skip under
// it; the race run is for the concurrent parts.
const raceEnabled = true
