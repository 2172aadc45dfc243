package storage

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// commit commits pb, turning Pebble's panic on a log it cannot write (a
// full disk: "write ...log: no space left on device") into an error, the
// first of which ends the DB's writes (ErrWriteFailed): a coordinator
// replica then stops applying and says why instead of dying with a stack.
// Pebble is not usable after that panic (its commit locks stay held), so
// the process must exit; opened again, the database recovers to its last
// commit.
func (db *DB) commit(pb *pebble.Batch) error {
	return db.write(func() error { return pb.Commit(db.wo) })
}

// set is pdb.Set through the same guard as commit.
func (db *DB) set(key, value []byte, wo *pebble.WriteOptions) error {
	return db.write(func() error { return db.pdb.Set(key, value, wo) })
}

func (db *DB) write(op func() error) error {
	if p := db.writeFailed.Load(); p != nil {
		return *p
	}
	err := db.unpanic(op)
	if errors.Is(err, ErrWriteFailed) {
		db.writeFailed.CompareAndSwap(nil, &err)
	}
	return err
}

// unpanic runs op, returning a Pebble panic as an ErrWriteFailed error.
func (db *DB) unpanic(op func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			cause, ok := r.(error)
			if !ok {
				cause = fmt.Errorf("%v", r)
			}
			err = fmt.Errorf("%w: %s: %w", ErrWriteFailed, db.dir, cause)
		}
	}()
	return op()
}

// WriteFailed is the commit failure that ended the DB's writes, nil while
// it takes them.
func (db *DB) WriteFailed() error {
	if p := db.writeFailed.Load(); p != nil {
		return *p
	}
	return nil
}
