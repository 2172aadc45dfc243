package main

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

	"dcpi/coordinator"
)

// lockName is the file in a role's data directory that one process at a
// time holds locked (flock), with its PID and role written in it, so that a
// second process started on the same directory says at once who has it
// instead of waiting on Raft's store or sharing JetStream's files.
const lockName = ".dcpi.lock"

// errDirInUse is wrapped by lockDataDir's error when another process holds
// the directory.
var errDirInUse = errors.New("in use by another process")

// lockDataDir creates dir if needed and locks it for role ("dcpi
// coordinator"); flag names the option that chose it, for the message. The
// lock is released by release or when the process exits.
func lockDataDir(dir, flag, role string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
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
			return nil, fmt.Errorf("%s %s: %w (%s); stop it first, or give another %s", flag, dir, errDirInUse, who, flag)
		}
		return nil, fmt.Errorf("%s %s: locking %s: %w", flag, dir, lockName, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(role+" pid "+strconv.Itoa(os.Getpid())+" since "+time.Now().Format(time.DateTime)+"\n"), 0)
	return func() { f.Close() }, nil
}

// explainOpenError turns the error of opening a profile database that
// another process is writing (Pebble's lock) into one line saying so.
func explainOpenError(err error, flag, dir string) error {
	// Pebble's flock fails with EWOULDBLOCK across processes, and with
	// its own message within one (a test, or the demo's replicas).
	if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN) ||
		(err != nil && strings.Contains(err.Error(), "lock held by current process")) {
		return fmt.Errorf("%s %s: %w (another dcpi node or coordinator is writing this database); stop it first, or give another %s", flag, dir, errDirInUse, flag)
	}
	return err
}

// fleetParentError says, when dir is not a profile database but holds
// replicas' data directories (a demo's --dir: c1/, c2/, ...), which one to
// give instead; nil otherwise.
func fleetParentError(flag, dir string) error {
	var ids []string
	for i := 1; i <= 9; i++ {
		id := "c" + strconv.Itoa(i)
		if _, err := coordinator.ProfileDBDir(filepath.Join(dir, id)); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s holds a fleet's coordinator replicas (%s), each with its own copy of the database; use %s %s", flag, dir,
		strings.Join(ids, ", "), flag, filepath.Join(dir, ids[0]))
}
