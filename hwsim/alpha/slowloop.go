//go:build !speedguard_slow

package alpha

// slowLoop, true only in builds tagged speedguard_slow (slowloop_on.go),
// adds a call to an empty function to every instruction of the run loop:
// a slowdown of a few percent that make speed-guard must catch.
const slowLoop = false

func slowNop() {}
