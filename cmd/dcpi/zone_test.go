package main

import (
	"os"
	"testing"
	"time"
)

// TestMain reads and prints local times in UTC: the outputs in testdata
// name times (a time range's, its epochs'), and they must read the same
// on every machine.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(m.Run())
}
