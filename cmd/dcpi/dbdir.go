package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"dcpi/coordinator"
)

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
