package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

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
	// ErrLocked: another process (or another DB of this one) has the
	// database open for writing.
	ErrLocked = errors.New("storage: database in use")
	// ErrWriteFailed: a commit could not be written (a full disk, an I/O
	// error). Nothing of it is in the database, and the DB takes no more
	// writes: reopened, it recovers to its last commit.
	ErrWriteFailed = errors.New("storage: write failed")
)

// SchemaVersion is stored under the 'm' "schema" key; Open refuses others
// (version 2 added the host-major 'h' table).
const SchemaVersion = "dcpi-profile-db/2"

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
	// MemTableBytes is the size of each Pebble memtable; 0 means 32 MiB
	// (defaultMemTableBytes). Up to memTableStopWrites of them fill
	// before writes wait for a flush.
	MemTableBytes int64
	// Log receives Pebble's messages; nil drops informational ones and
	// sends errors to the standard logger.
	Log io.Writer
}

// Pebble tuning for ingest (measured with BenchmarkIngest in package
// coordinator, whose raw subject opens its database with the same
// options as the coordinator's FSM).
//
// An ingest commits batches of tens of thousands of merges. With Pebble's
// 4 MiB default memtable a batch that size is over its large-batch
// threshold (half a memtable) and is flushed as its own small L0 table; the
// flushes and the compactions of all those tables were two thirds of
// ingest's CPU time. 32 MiB memtables take the batches in and flush them
// together; past that the skiplist inserts got slower (more cache misses)
// for no fewer compactions. Four memtables before writes stall let a burst
// ride out a slow flush.
//
// Counts keys are spread over the whole key space of an epoch, so every
// L0 table overlaps every table of the level below, and each L0 compaction
// rewrites all of it: compacting L0 at 16 sublevels rather than 4 rewrites
// the level below a quarter as often (ingest's CPU per entry fell by about
// a fifth), at the price of reads merging more L0 tables until then —
// which is why the coordinator compacts an epoch fully once it is sealed
// (Compact).
const (
	defaultMemTableBytes  = 32 << 20
	memTableStopWrites    = 4
	l0CompactionThreshold = 16
	l0StopWritesThreshold = 48
)

// DB is a profile database on disk. Its methods are safe for concurrent use.
type DB struct {
	pdb      *pebble.DB
	wo       *pebble.WriteOptions
	readOnly bool
	dir      string
	// damage is the first corruption Pebble found in a file (nil: none
	// yet): the read that found it fails, and Damaged says so after.
	damage *atomic.Pointer[pebble.DataCorruptionInfo]
	// flushFailed receives Pebble's background errors, such as a failed
	// flush's (Close's, say, of a memtable holding a value the merger
	// refuses, which Pebble would retry for ever).
	flushFailed chan error
	// writeFailed is the first failed commit (nil: none): Pebble panics
	// when its log cannot be written and is not to be written to after,
	// so every later write returns this.
	writeFailed atomic.Pointer[error]

	mu     sync.RWMutex // guards closed against the methods
	closed bool

	// ctx ends when Close begins, so a long Compact gives way to Close
	// instead of holding it up.
	ctx    context.Context
	cancel context.CancelFunc

	smu     sync.Mutex
	streams map[streamID]*stream

	// stacks serializes the calls that assign stack IDs, from reading
	// the stack table to committing, so two calls never give one ID to
	// two stacks; it guards the cache of committed IDs.
	stacks stackCache
	// meAddrs serializes the calls that merge ProfileMe address lists,
	// from reading a stored list to committing its merge.
	meAddrs sync.Mutex
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
	damage := new(atomic.Pointer[pebble.DataCorruptionInfo])
	flushFailed := make(chan error, 1)
	logger := pebbleLogger{opts.Log}
	po := &pebble.Options{
		Merger:             counterMerger,
		ReadOnly:           opts.ReadOnly,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             logger,
		// Pebble's default answer to a damaged file is its logger's
		// Fatalf: the process ends with kilobytes of stack, a server
		// with it. The read that found it returns the error anyway;
		// remember the damage so the database can say so (Damaged).
		EventListener: &pebble.EventListener{
			DataCorruption: func(info pebble.DataCorruptionInfo) { damage.CompareAndSwap(nil, &info) },
			BackgroundError: func(err error) {
				logger.Errorf("%v", err)
				select {
				case flushFailed <- err:
				default:
				}
			},
		},
	}
	if !opts.ReadOnly {
		po.MemTableSize = uint64(defaultMemTableBytes)
		if opts.MemTableBytes > 0 {
			po.MemTableSize = uint64(opts.MemTableBytes)
		}
		po.MemTableStopWritesThreshold = memTableStopWrites
		po.L0CompactionThreshold = l0CompactionThreshold
		po.L0StopWritesThreshold = l0StopWritesThreshold
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
		if lockHeld(err) {
			return nil, fmt.Errorf("storage: open %s: %w: %w", dir, ErrLocked, err)
		}
		if err := damagedIn(dir, err); err != nil && errors.Is(err, ErrCorrupt) {
			return nil, err
		}
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	db := &DB{pdb: pdb, wo: pebble.Sync, readOnly: opts.ReadOnly, dir: dir, damage: damage, flushFailed: flushFailed, streams: map[streamID]*stream{}}
	db.ctx, db.cancel = context.WithCancel(context.Background())
	if opts.NoSync {
		db.wo = pebble.NoSync
	}
	if err := db.checkSchema(); err != nil {
		db.cancel()
		pdb.Close()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	return db, nil
}

func (db *DB) checkSchema() error {
	v, closer, err := db.pdb.Get(schemaKey)
	err = db.damaged(err)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if db.readOnly {
			return fmt.Errorf("%w: no schema record: not a profile database", ErrCorrupt)
		}
		return db.pdb.Set(schemaKey, []byte(SchemaVersion), pebble.Sync)
	case err != nil:
		return err
	}
	defer closer.Close()
	if !bytes.Equal(v, []byte(SchemaVersion)) {
		return fmt.Errorf("%w: schema %q, this build reads %q: rebuild the database (or use a build of its schema)", ErrCorrupt, v, SchemaVersion)
	}
	return nil
}

// Close closes the database; later calls on db return ErrClosed.
func (db *DB) Close() error {
	db.cancel() // a Compact in progress returns
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	db.closed = true
	if err := db.WriteFailed(); err != nil {
		// Pebble's panic left its commit locks held: its Close would wait
		// for ever. Its files and lock stay as they are until the process
		// exits; opened again then, the database recovers to the last
		// commit.
		return fmt.Errorf("storage: close: %w (the database is released when this process exits)", err)
	}
	if !db.readOnly {
		// Flushed, a closed database holds its data in tables, whose
		// blocks carry checksums, and its newest log is empty. Left in
		// the log, a damaged record there would read as a write torn by
		// a crash, which Pebble's recovery drops without error: the
		// database would open with silently smaller counts.
		if err := db.flush(); err != nil {
			db.pdb.Close()
			return fmt.Errorf("storage: close: flush: %w", err)
		}
	}
	if err := db.pdb.Close(); err != nil {
		return fmt.Errorf("storage: close: %w", err)
	}
	return nil
}

// Damaged returns nil while no read has found a damaged file, and after
// one has, an error wrapping ErrCorrupt that names the file: its reads
// fail (or may), so a server stops serving from it (coordinator's
// readiness) rather than answer from what is left.
func (db *DB) Damaged() error {
	info := db.damage.Load()
	if info == nil {
		return nil
	}
	return fmt.Errorf("%w: %s: damaged file %s: %v", ErrCorrupt, db.dir, info.Path, info.Details)
}

// flush writes the memtables to tables, or returns the error of a flush
// that failed (Pebble would retry it for ever, and Flush wait).
func (db *DB) flush() error {
	select {
	case <-db.flushFailed: // an earlier background error, logged then
	default:
	}
	done, err := db.pdb.AsyncFlush()
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case err := <-db.flushFailed:
		return db.damaged(err)
	}
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

// Compact fully compacts the database: every table's merge operands are
// combined, down to one value per key in the bottom level. Ingest writes
// every count as a merge, so until compactions reach them a read sums a
// stack of operands per key: BenchmarkProfileFleet reads a fleet-wide
// profile 2.6 times faster after Compact, and the more batches a key's
// roll-up has seen the bigger the gain. It takes as long as rewriting the
// database, during which reads and writes go on; Close cuts it short (the
// error wraps ErrClosed). The coordinator compacts only a sealed epoch
// (CompactEpoch).
func (db *DB) Compact() error {
	if err := db.use(true); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	// Every key begins with a table byte below 0xff.
	if err := db.pdb.Compact(db.ctx, []byte{0}, []byte{0xff}, false); err != nil {
		if db.ctx.Err() != nil {
			return fmt.Errorf("storage: compact: %w (%w)", ErrClosed, err)
		}
		return fmt.Errorf("storage: compact: %w", err)
	}
	return nil
}

// epochTables are the tables whose keys begin with the epoch (doc.go's
// schema; TestEpochTablesMatchSchema): an epoch's part of each is one
// contiguous key range.
var epochTables = []byte{tCounts, tFleet, tHosts, tSummary, tUnknown, tDrops, tEpochs, tAcks,
	tStackFleet, tStackHosts, tStackDrops, tStackSummary, tValueHost, tValueFleet, tValueStats,
	tMe, tMeFleet, tMeSummary, tMeDrops, tMeHist, tMeHistFleet, tMeAddrs, tMeAddrFleet}

// CompactEpoch compacts epoch e's key range of every table keyed by
// epoch, down to one value per key in the bottom level, as Compact does
// for the whole database — but leaves the open epoch's keys, which ingest
// is still merging into, to Pebble's own compactions: pushing them to the
// bottom at every seal would rewrite them there again as they keep
// changing. The coordinator runs it in the background when an epoch is
// sealed; Close cuts it short (the error wraps ErrClosed).
func (db *DB) CompactEpoch(e uint64) error { return db.CompactEpochs(e, e) }

// CompactEpochs compacts epochs lo..hi as CompactEpoch compacts one. After
// a retention merge or expiry (MergeEpochs, ExpireEpochs) it is what
// reclaims the space: a range deletion only hides the keys it covers, and
// the compaction drops them from the files and deletes what becomes
// empty.
func (db *DB) CompactEpochs(lo, hi uint64) error {
	if err := db.use(true); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	for _, t := range epochTables {
		start, end := epochRange(t, lo, hi)
		if err := db.pdb.Compact(db.ctx, start, end, false); err != nil {
			if db.ctx.Err() != nil {
				return fmt.Errorf("storage: compact epochs %d..%d: %w (%w)", lo, hi, ErrClosed, err)
			}
			return fmt.Errorf("storage: compact epochs %d..%d: %w", lo, hi, err)
		}
	}
	return nil
}

// get reads one key's value into a fresh slice; ok is false if absent.
func (db *DB) get(key []byte) (val []byte, ok bool, err error) {
	v, closer, err := db.pdb.Get(key)
	err = db.damaged(err)
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

// Fatalf is Pebble's answer to what it cannot continue after: a failed
// commit to its log or MANIFEST (the disk), or a broken invariant. The
// process ends, as Pebble requires, with the message's first line (its
// details, stacks included, can run to kilobytes). A damaged file is not
// this: it is an error of the read that found it (DataCorruption).
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg, _, _ := strings.Cut(fmt.Sprintf(format, args...), "\n")
	log.Fatalf("pebble: fatal: %s", msg)
}

// lockHeld reports whether Pebble refused to open a database because its
// lock is held: flock fails with EWOULDBLOCK across processes, and Pebble
// says so in its own words within one (a test, the demo's replicas). The
// second has no sentinel in Pebble, so its text is matched here, the one
// package that imports Pebble, and callers test ErrLocked.
func lockHeld(err error) bool {
	return errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN) ||
		strings.Contains(err.Error(), "lock held by current process")
}
