//go:build !race

package simhost_test

const raceEnabled = false
