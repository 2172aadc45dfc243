package localrun

import (
	"fmt"
	"os"
	"path/filepath"

	"dcpi/storage"
)

// Aside is a new profile database written beside its output path and
// renamed into place only when complete, as Run does: for another kind
// of host's run (linuxhost/linuxrun) into the same database format.
type Aside struct {
	out, tmp  string
	existing  outputState
	db        *storage.DB
	committed bool
	// Removed are earlier runs' abandoned temporary databases.
	Removed []string
}

// OpenAside checks out (nothing, an empty directory or a profile
// database) and opens the new database aside.
func OpenAside(out string) (*Aside, error) {
	a := &Aside{out: filepath.Clean(out)}
	var err error
	if a.existing, err = checkProfileOutput(a.out); err != nil {
		return nil, err
	}
	a.Removed = removeAbandoned(a.out)
	if a.tmp, err = os.MkdirTemp(filepath.Dir(a.out), tmpPrefix(a.out)); err != nil {
		return nil, fmt.Errorf("-o %s: %w", a.out, err)
	}
	if a.db, err = storage.Open(a.tmp, storage.Options{NoSync: true}); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// DB is the new database, open until Commit or Close.
func (a *Aside) DB() *storage.DB { return a.db }

// Output is where the database goes.
func (a *Aside) Output() string { return a.out }

// Commit closes the database and renames it into place; kept says a
// database that was there is now Output + ".old".
func (a *Aside) Commit() (kept bool, err error) {
	err = a.db.Close()
	a.db = nil
	if err != nil {
		return false, fmt.Errorf("closing the profile database: %w", err)
	}
	if err := commitProfile(a.tmp, a.out, a.existing); err != nil {
		return false, err
	}
	a.committed = true
	return a.existing == outputDatabase, nil
}

// Close closes the database and, unless committed, removes it.
func (a *Aside) Close() {
	if a.db != nil {
		a.db.Close()
		a.db = nil
	}
	if !a.committed && a.tmp != "" {
		os.RemoveAll(a.tmp)
	}
}

// WriteWhere says where the committed profile is and how to look at it.
func WriteWhere(w interface{ Write([]byte) (int, error) }, out string, kept bool) {
	r := Run{out: out}
	r.writeWhere(w, kept)
}
