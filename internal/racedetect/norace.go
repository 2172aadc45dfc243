//go:build !race

// Package racedetect tells tests whether the race detector is on. Tests
// that only check the simulator's numbers, single-threaded, skip under it:
// the race run (make race) is for the concurrent parts, and the detector
// slows the simulator tenfold.
package racedetect

// Enabled reports whether the binary was built with the race detector.
const Enabled = false
