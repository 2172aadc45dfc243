package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// damageError is Pebble's report of a damaged file, as one line naming
// the database. Pebble's own error carries its detail on further lines,
// which a tool's message, a coordinator's error header (one line by
// NATS's rules) and a web page's status text cannot hold. It wraps
// ErrCorrupt and Pebble's error.
type damageError struct {
	dir string
	err error
}

func (e *damageError) Error() string {
	line, _, _ := strings.Cut(e.err.Error(), "\n")
	return fmt.Sprintf("%s is damaged: %s", e.dir, line)
}

func (e *damageError) Unwrap() []error { return []error{ErrCorrupt, e.err} }

// damaged turns a Pebble corruption error into a damageError, and leaves
// any other error (or nil) as it is.
func (db *DB) damaged(err error) error { return damagedIn(db.dir, err) }

func damagedIn(dir string, err error) error {
	if err == nil || !pebble.IsCorruptionError(err) {
		return err
	}
	return &damageError{dir: dir, err: err}
}

// iterator is a Pebble iterator whose errors say which database is
// damaged, in one line (damageError).
type iterator struct {
	*pebble.Iterator
	db *DB
}

// newIter is db.pdb.NewIter with its errors made damageErrors.
func (db *DB) newIter(o *pebble.IterOptions) (*iterator, error) {
	it, err := db.pdb.NewIter(o)
	if err != nil {
		return nil, db.damaged(err)
	}
	return &iterator{Iterator: it, db: db}, nil
}

func (it *iterator) ValueAndErr() ([]byte, error) {
	v, err := it.Iterator.ValueAndErr()
	return v, it.db.damaged(err)
}

func (it *iterator) Error() error { return it.db.damaged(it.Iterator.Error()) }

func (it *iterator) Close() error { return it.db.damaged(it.Iterator.Close()) }

// Abandoned says whether dir is a database no process holds open: its
// lock file is there and can be taken, so whoever wrote it is gone (a
// killed dcpi profile's half-written database, say). A directory without
// the lock file is not one, or not yet one, and is not Abandoned.
func Abandoned(dir string) bool {
	lock := filepath.Join(dir, "LOCK")
	if info, err := os.Lstat(lock); err != nil || !info.Mode().IsRegular() {
		return false
	}
	c, err := vfs.Default.Lock(lock)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
