//go:build !unix

package datadir

import "os"

// flock does nothing where flock(2) does not exist: two processes on one
// data directory are then not detected.
func flock(*os.File) error { return nil }
