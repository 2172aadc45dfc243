package storage

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
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
