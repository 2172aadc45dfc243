package profiledb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"dcpi/coordinator"
	"dcpi/storage"
)

// OpenDir opens the local profile database at dir read-only, for the
// tools' --db: a database "dcpi node --db" wrote, or a (stopped)
// coordinator replica's data directory, whose current generation it
// opens. Each way dir can fail to be one (missing, a file, empty, not a
// database, a demo's directory of replicas) has its own error, naming
// --db and what to give instead.
func OpenDir(dir string) (*storage.DB, error) {
	if d, err := coordinator.ProfileDBDir(dir); err == nil {
		dir = d // a (stopped) coordinator replica's data directory
	} else if err := fleetParentError("--db", dir); err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("--db %s: no such directory (profile a program into it with: %s; a long-lived host: dcpi node --db %s)", dir, profileCommand(dir), dir)
	case err != nil:
		return nil, fmt.Errorf("--db %s: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("--db %s: not a directory", dir)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) == 0 {
		return nil, fmt.Errorf("--db %s: empty directory, not a profile database", dir)
	}
	db, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("--db %s: cannot read a profile database there: %w", dir, err)
	}
	return db, nil
}

// profileCommand is the dcpi profile command line that writes the
// database the tools would read at dir (dcpi-db, their default, needs no
// -o).
func profileCommand(dir string) string {
	if dir == "dcpi-db" {
		return "dcpi profile -- ./prog"
	}
	return "dcpi profile -o " + dir + " -- ./prog"
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
