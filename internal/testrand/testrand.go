// Package testrand is the one source of randomness for randomized tests
// (Pebble's metamorphic tests are the model): every test draws from a
// generator whose seed it logs, so a failure seen once can be run again
// exactly. Only tests import it; it registers the -seed flag.
//
// A randomized test starts with
//
//	r := testrand.New(t)
//
// (or testrand.Seed(t) where a seed, not a generator, is wanted, as a cache
// whose replacement is itself seeded) and draws everything random from it.
// Its log then carries a line such as
//
//	seed 1754917263318811000 (replay with -seed 1754917263318811000)
//
// and the failure replays with that seed and the test's name:
//
//	go test ./storage -run 'TestRandomizedAgainstModel$' -seed 1754917263318811000
//
// Name the package before -seed: go test hands a flag it does not know,
// and everything after it, to the test binary. go test shows a failing
// test's log even without -v.
//
// Without -seed each test takes a fresh seed from the clock, so repeated
// runs (-count=N) explore new sequences; with it every randomized test of
// the run uses that seed. A failure replays exactly only if nothing else
// the test depends on is random: draw from the generator, never from
// math/rand's global source or the clock; where goroutines race (a real
// server, the race detector), the seed replays the inputs, not the
// interleaving.
package testrand

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

var seed = flag.Uint64("seed", 0, "seed for randomized tests (0: a fresh one from the clock, logged)")

// Seed returns the seed given by -seed, or else one from the clock, and
// logs it with the flag that replays it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", s, s)
	return s
}

// New returns a generator seeded by Seed.
func New(t testing.TB) *rand.Rand {
	t.Helper()
	s := Seed(t)
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}
