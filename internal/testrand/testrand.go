// Package testrand gives randomized tests (Pebble's metamorphic tests are
// the model) a seeded source whose seed is logged, so a failure replays
// with -seed N. Only tests import it; it registers the -seed flag.
package testrand

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

var seed = flag.Uint64("seed", 0, "seed for randomized tests (0: time-based)")

// New returns a source seeded by -seed, or by the clock, and logs the seed.
func New(t testing.TB) *rand.Rand {
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", s, s)
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}
