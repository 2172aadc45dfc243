//go:build unix

package datadir

import (
	"os"
	"syscall"
)

// flock takes f's exclusive lock without waiting.
func flock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }
