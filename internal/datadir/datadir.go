// Package datadir locks a role's data directory for one process at a time
// (flock), with the holder's PID and role written in the lock, so that a
// second process on the same directory says at once who has it.
package datadir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LockName is the file in a role's data directory that one process at a
// time holds locked (flock), with its PID and role written in it, so that a
// second process started on the same directory says at once who has it
// instead of waiting on Raft's store or sharing JetStream's files.
const LockName = ".dcpi.lock"

// ErrInUse is wrapped by Lock's error when another process holds
// the directory.
var ErrInUse = errors.New("in use by another process")

// Lock creates dir if needed and locks it for role ("dcpi
// coordinator"); flag names the option that chose it, for the message. The
// lock is released by release or when the process exits.
func Lock(dir, flag, role string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, dir, err)
	}
	if err := flock(f); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 200))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "another process"
			}
			return nil, fmt.Errorf("%s %s: %w (%s); stop it first, or give another %s", flag, dir, ErrInUse, who, flag)
		}
		return nil, fmt.Errorf("%s %s: locking %s: %w", flag, dir, LockName, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(role+" pid "+strconv.Itoa(os.Getpid())+" since "+time.Now().Format(time.DateTime)+"\n"), 0)
	return func() { f.Close() }, nil
}
