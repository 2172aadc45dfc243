package localrun

import (
	"dcpi/storage"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// outputState is what is at a profile's output path.
type outputState int

const (
	outputNone     outputState = iota // nothing
	outputEmptyDir                    // an empty directory
	outputDatabase                    // a dcpi profile database
)

// checkProfileOutput says what is at out and whether dcpi profile may put
// a new database there; it refuses anything but nothing, an empty
// directory, or a dcpi profile database (whose place it takes, it kept as
// out.old, which must itself be nothing or a dcpi profile database).
func checkProfileOutput(out string) (outputState, error) {
	state, err := outputAt(out)
	if err != nil {
		return 0, fmt.Errorf("-o %s: %w; choose another name or move it away", out, err)
	}
	if state == outputDatabase {
		if _, err := outputAt(out + ".old"); err != nil {
			return 0, fmt.Errorf("-o %s: the previous profile would become %s.old, but that %w; move it away", out, out, err)
		}
	}
	return state, nil
}

var errNotProfileDB = errors.New("is not a dcpi profile database")

// outputAt classifies what is at path, refusing what dcpi profile must
// not replace.
func outputAt(path string) (outputState, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return outputNone, nil
	case err != nil:
		return 0, err
	case !st.IsDir():
		return 0, fmt.Errorf("exists and %w (a file)", errNotProfileDB)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return 0, err
	}
	if len(ents) == 0 {
		return outputEmptyDir, nil
	}
	// Pebble keeps MANIFEST-NNNNNN files; look before opening, as an
	// open could leave a lock file in someone else's directory.
	if !slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return strings.HasPrefix(e.Name(), "MANIFEST-") }) {
		return 0, fmt.Errorf("is a directory that %w", errNotProfileDB)
	}
	db, err := storage.Open(path, storage.Options{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("is a database dcpi cannot read (%v), so it %w", err, errNotProfileDB)
	}
	db.Close()
	return outputDatabase, nil
}

// commitProfile puts the finished database tmp at out: a database there
// becomes out.old (replacing an older one, which checkProfileOutput found
// to be a profile database or nothing).
func commitProfile(tmp, out string, existing outputState) error {
	switch existing {
	case outputEmptyDir:
		if err := os.Remove(out); err != nil {
			return fmt.Errorf("-o %s: %w", out, err)
		}
	case outputDatabase:
		old := out + ".old"
		state, err := outputAt(old)
		if err != nil {
			return fmt.Errorf("-o %s: %s %w", out, old, err)
		}
		if state != outputNone {
			if err := os.RemoveAll(old); err != nil {
				return fmt.Errorf("-o %s: removing the older %s: %w", out, old, err)
			}
		}
		if err := os.Rename(out, old); err != nil {
			return fmt.Errorf("-o %s: keeping the previous profile: %w", out, err)
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	return nil
}
