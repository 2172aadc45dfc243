package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Sentinel errors callers test for.
var (
	// ErrSeqGap: a batch's Seq skips past the next one expected for its
	// (Host, CPU); nothing was written, and the caller should redeliver in
	// order.
	ErrSeqGap = errors.New("storage: batch sequence gap")
	// ErrNotFound: no such image or epoch.
	ErrNotFound = errors.New("storage: not found")
	// ErrCorrupt: a stored key or value does not decode.
	ErrCorrupt = errors.New("storage: corrupt")
	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("storage: closed")
	// ErrReadOnly: a write to a DB opened read-only.
	ErrReadOnly = errors.New("storage: read-only")
	// ErrInvalid: a record to store breaks a rule (bad epoch state, ...).
	ErrInvalid = errors.New("storage: invalid")
)

// schemaVersion is stored under the 'm' "schema" key; Open refuses others.
const schemaVersion = "dcpi-profile-db/1"

// Options configure Open. The zero value is a durable read-write database.
type Options struct {
	// NoSync commits without fsync: a crash may lose the last commits
	// (never half of one). For tests, and for a Raft FSM whose log already
	// makes writes durable.
	NoSync bool
	// ReadOnly opens an existing database (a checkpoint, say) for reading.
	ReadOnly bool
	// CacheBytes is the block cache size; 0 means Pebble's default.
	CacheBytes int64
	// Log receives Pebble's messages; nil drops informational ones and
	// sends errors to the standard logger.
	Log io.Writer
}

// DB is a profile database on disk. Its methods are safe for concurrent use.
type DB struct {
	pdb      *pebble.DB
	wo       *pebble.WriteOptions
	readOnly bool

	mu     sync.RWMutex // guards closed against the methods
	closed bool

	smu     sync.Mutex
	streams map[streamID]*stream
}

// streamID names a batch stream: a (host, CPU) whose Seqs are contiguous.
type streamID struct {
	host string
	cpu  uint16
}

// stream caches a stream's applied Seq. Its mutex serializes the
// read-check-commit of ApplyBatch per stream, so batches of different
// streams commit concurrently (and Pebble groups their commits).
type stream struct {
	mu     sync.Mutex
	loaded bool
	seq    uint64
}

// Open opens or creates the database in dir.
func Open(dir string, opts Options) (*DB, error) {
	po := &pebble.Options{
		Merger:             counterMerger,
		ReadOnly:           opts.ReadOnly,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{opts.Log},
	}
	if opts.CacheBytes > 0 {
		c := pebble.NewCache(opts.CacheBytes)
		defer c.Unref()
		po.Cache = c
	}
	if opts.ReadOnly {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("storage: open %s read-only: %w", dir, err)
		}
	}
	pdb, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	db := &DB{pdb: pdb, wo: pebble.Sync, readOnly: opts.ReadOnly, streams: map[streamID]*stream{}}
	if opts.NoSync {
		db.wo = pebble.NoSync
	}
	if err := db.checkSchema(); err != nil {
		pdb.Close()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	return db, nil
}

func (db *DB) checkSchema() error {
	v, closer, err := db.pdb.Get(schemaKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if db.readOnly {
			return fmt.Errorf("%w: no schema record: not a profile database", ErrCorrupt)
		}
		return db.pdb.Set(schemaKey, []byte(schemaVersion), pebble.Sync)
	case err != nil:
		return err
	}
	defer closer.Close()
	if !bytes.Equal(v, []byte(schemaVersion)) {
		return fmt.Errorf("%w: schema %q, this build reads %q", ErrCorrupt, v, schemaVersion)
	}
	return nil
}

// Close closes the database; later calls on db return ErrClosed.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	db.closed = true
	if err := db.pdb.Close(); err != nil {
		return fmt.Errorf("storage: close: %w", err)
	}
	return nil
}

// use takes the read side of the close lock; callers defer db.mu.RUnlock().
func (db *DB) use(write bool) error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	if write && db.readOnly {
		db.mu.RUnlock()
		return ErrReadOnly
	}
	return nil
}

// Checkpoint writes a consistent copy of the database to dir, which must not
// exist (Pebble hard-links the immutable files, so this is cheap). The copy
// opens with Open; the coordinator ships it as a Raft snapshot.
func (db *DB) Checkpoint(dir string) error {
	if err := db.use(false); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if err := db.pdb.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("storage: checkpoint to %s: %w", dir, err)
	}
	return nil
}

// get reads one key's value into a fresh slice; ok is false if absent.
func (db *DB) get(key []byte) (val []byte, ok bool, err error) {
	v, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	val = bytes.Clone(v)
	return val, true, closer.Close()
}

// pebbleLogger keeps Pebble's informational chatter out of the profiler's
// output unless asked for.
type pebbleLogger struct{ w io.Writer }

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.w != nil {
		fmt.Fprintf(l.w, "pebble: "+format+"\n", args...)
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	if l.w != nil {
		fmt.Fprintf(l.w, "pebble: error: "+format+"\n", args...)
		return
	}
	log.Printf("pebble: error: "+format, args...)
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	log.Fatalf("pebble: fatal: "+format, args...)
}
