package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"dcpi/coordinator"
	"dcpi/internal/datadir"
	"dcpi/storage"
)

// explainOpenError turns the error of opening a profile database that
// another process is writing into one line saying so.
func explainOpenError(err error, flag, dir string) error {
	if errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("%s %s: %w (another dcpi node or coordinator is writing this database); stop it first, or give another %s", flag, dir, datadir.ErrInUse, flag)
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
