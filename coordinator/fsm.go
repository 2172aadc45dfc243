package coordinator

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"dcpi/storage"
)

// FSM is the replicated state machine: the profile database and the
// registry (nodes, epochs, acks) in it, changed only by Apply of log
// entries and by Restore of snapshots. Apply, ApplyBatch, Snapshot and
// Restore are called by raft from one goroutine; DB and View are safe from
// any.
//
// The database is opened without fsync: the Raft log is the durable record,
// and every entry's writes carry its log index (storage.Meta.SetLogIndex) in
// the same Pebble batch, so after a crash the replica replays exactly the
// entries its database lacks and skips those it holds.
type FSM struct {
	dir  string // holds CURRENT and the gen-N database directories
	logf func(string, ...any)

	mu  sync.RWMutex // guards db and gen against Restore's swap
	db  *storage.DB
	gen uint64

	applied uint64 // log index db reflects; FSM goroutine only

	// storeErr is the first storage failure of an apply (a full disk, a
	// damaged table). The entry it failed on is not in the database, so
	// no later entry may be applied either: a replica that went on would
	// hold less than the others for good, since applied would pass the
	// entry. A restart replays the log from the entry (applied stays
	// before it). onStoreError hears of it once: the replica stops.
	storeErr     atomic.Pointer[error]
	onStoreError func(error)
	// onApplied hears of every command applied (OnApplied).
	onApplied func(Command, any)

	// metaVersion counts the applied changes to nodes, epochs and epoch
	// acknowledgements (and restores), so that readers of only those
	// (the leader's heartbeat answers) can keep what they read until it
	// moves instead of reading the database per request.
	metaVersion atomic.Uint64

	cmu        sync.Mutex  // guards compacting and toCompact
	compacting bool        // a background compaction is running
	toCompact  [][2]uint64 // epoch ranges (sealed, merged or expired) it has yet to compact
	cwg        sync.WaitGroup
}

// FSM results other than errors: Apply returns []storage.Outcome for an
// Ingest, a storage.Outcome for an IngestValues, a storage.PathOutcome
// for an UploadPaths, the new epoch's number for a CutEpoch, a
// ScheduledCutResult for a ScheduledCut, a MergeResult for a MergeEpochs,
// an ExpireResult for an ExpireEpochs, an AckResult for an AckEpoch,
// and nil for the others. A command that breaks a rule returns an
// error wrapping ErrBadCommand, having changed nothing.

// MergeResult is the FSM's answer to a MergeEpochs: the merged epoch and
// how many epoch records it merged (0: the range no longer qualified and
// nothing changed).
type MergeResult struct {
	Epoch storage.Epoch
	Parts int
}

// ExpireResult is the FSM's answer to an ExpireEpochs: the epoch records
// deleted (0: none was left, nothing changed) and what they held.
type ExpireResult struct {
	Epochs    int
	Expired   storage.Expired
	Processes int // process records deleted
}

// AckResult is the FSM's answer to an AckEpoch.
type AckResult struct{ Late bool }

// ScheduledCutResult is the FSM's answer to a ScheduledCut: the epoch the
// cut opened, or 0 when the epoch it named was no longer open and nothing
// changed.
type ScheduledCutResult struct{ Opened uint64 }

// currentFile names the live generation. (Not "CURRENT": that is Pebble's
// own marker, and a reader pointed at the FSM's directory by mistake would
// take it for a database of an unsupported format.)
const currentFile = "GENERATION"

// ProfileDBDir returns the directory of the profile database a replica
// with data directory dataDir is serving (the FSM keeps generations, one
// per restored snapshot), so tools can open it read-only once the replica
// is stopped.
func ProfileDBDir(dataDir string) (string, error) {
	dir := filepath.Join(dataDir, "db")
	cur, err := os.ReadFile(filepath.Join(dir, currentFile))
	if err != nil {
		return "", fmt.Errorf("coordinator: %s is not a coordinator data directory: %w", dataDir, err)
	}
	g, err := strconv.ParseUint(strings.TrimSpace(string(cur)), 10, 64)
	if err != nil || g == 0 {
		return "", fmt.Errorf("coordinator: %s: bad generation %q", filepath.Join(dir, currentFile), cur)
	}
	return genDir(dir, g), nil
}

func genDir(dir string, gen uint64) string {
	return filepath.Join(dir, fmt.Sprintf("gen-%06d", gen))
}

// OpenFSM opens (or creates) the state machine's database under dir.
func OpenFSM(dir string, logf func(string, ...any)) (*FSM, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("coordinator: fsm: %w", err)
	}
	f := &FSM{dir: dir, logf: logf, gen: 1}
	cur, err := os.ReadFile(filepath.Join(dir, currentFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := writeCurrent(dir, 1); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("coordinator: fsm: %w", err)
	default:
		g, err := strconv.ParseUint(strings.TrimSpace(string(cur)), 10, 64)
		if err != nil || g == 0 {
			return nil, fmt.Errorf("coordinator: fsm: %s: bad generation %q", filepath.Join(dir, currentFile), cur)
		}
		f.gen = g
	}
	// Leftovers of a crash during Snapshot or Restore.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() && e.Name() != filepath.Base(genDir(dir, f.gen)) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	if f.db, err = storage.Open(genDir(dir, f.gen), storage.Options{NoSync: true}); err != nil {
		return nil, fmt.Errorf("coordinator: fsm: %w", err)
	}
	if f.applied, err = f.db.LogIndex(); err != nil {
		f.db.Close()
		return nil, fmt.Errorf("coordinator: fsm: %w", err)
	}
	return f, nil
}

// writeCurrent points CURRENT at generation gen, atomically (rename).
func writeCurrent(dir string, gen uint64) error {
	tmp := filepath.Join(dir, currentFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.FormatUint(gen, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("coordinator: fsm: %w", err)
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, currentFile)); err != nil {
		return fmt.Errorf("coordinator: fsm: %w", err)
	}
	return syncFile(dir)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("coordinator: fsm: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("coordinator: fsm: sync %s: %w", path, err)
	}
	return nil
}

// Close closes the database, cutting short a background compaction.
func (f *FSM) Close() error {
	f.mu.Lock()
	err := f.db.Close()
	f.mu.Unlock()
	f.cwg.Wait()
	return err
}

// compactSoon compacts a sealed epoch's keys in the background (one
// compaction at a time; epochs sealed during one wait their turn), so
// that fleet-wide queries over the epoch read one value per key rather
// than summing the merge operands of every ingest
// (storage.DB.CompactEpoch). Every replica does it when it applies a
// SealEpoch, leader or not: the sealed epoch will get (almost) no more
// samples, so its keys are compacted once and stay that way; the open
// epoch's are left to Pebble (a full compaction at every seal would push
// them to the bottom level while ingest goes on merging into them:
// BenchmarkSealCompaction). It never holds up Apply: the compaction runs
// on its own goroutine beside ingest, takes no FSM lock (a Restore that
// swaps the database closes the old one, which ends a compaction of it),
// and changes no content, so replicas stay identical whenever it runs.
func (f *FSM) compactSoon(epoch uint64) { f.compactRangeSoon(epoch, epoch) }

// compactRangeSoon is compactSoon for epochs lo..hi: after a retention
// merge or expiry, the range whose keys it deleted.
func (f *FSM) compactRangeSoon(lo, hi uint64) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	f.toCompact = append(f.toCompact, [2]uint64{lo, hi})
	if f.compacting {
		return
	}
	f.compacting = true
	f.cwg.Add(1)
	go func() {
		defer f.cwg.Done()
		for {
			f.cmu.Lock()
			if len(f.toCompact) == 0 {
				f.compacting = false
				f.cmu.Unlock()
				return
			}
			e := f.toCompact[0]
			f.toCompact = f.toCompact[1:]
			f.cmu.Unlock()
			db := f.DB()
			start := time.Now()
			what := fmt.Sprintf("epoch %d", e[0])
			if e[1] != e[0] {
				what = fmt.Sprintf("epochs %d..%d", e[0], e[1])
			}
			if err := db.CompactEpochs(e[0], e[1]); err == nil {
				f.logf("coordinator: compacted %s in %v", what, time.Since(start).Round(time.Millisecond))
			} else if !errors.Is(err, storage.ErrClosed) {
				f.logf("coordinator: compact %s: %v", what, err)
			}
		}
	}()
}

// Compacting reports whether a compaction compactSoon or
// compactRangeSoon queued is queued or running. Nothing waits for one in
// production; a run in simulated time (loadgen/week) waits for it to end
// before it measures the database's size and times a query, so that both
// see the epochs as they settle rather than mid-rewrite.
func (f *FSM) Compacting() bool {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	return f.compacting
}

// DB is the current database. A Restore closes it; readers that must not
// see ErrClosed use View.
func (f *FSM) DB() *storage.DB {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.db
}

// View calls fn with the current database, holding off a Restore's swap
// until fn returns.
func (f *FSM) View(fn func(db *storage.DB) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fn(f.db)
}

// AppliedIndex is the log index the database reflects.
func (f *FSM) AppliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.applied
}

// generation is the database directory's generation (1 + restores).
func (f *FSM) generation() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.gen
}

// Apply implements raft.FSM.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	return f.ApplyCommand(l.Index, l.Data)
}

// ApplyCommand applies the encoded command of log entry index. An entry at
// or below the database's log index is already applied (a replay after a
// restart) and is skipped.
func (f *FSM) ApplyCommand(index uint64, data []byte) any {
	if index != 0 && index <= f.applied {
		return nil
	}
	if p := f.storeErr.Load(); p != nil {
		return *p
	}
	c, err := DecodeCommand(data)
	if err != nil {
		f.logf("coordinator: log entry %d rejected: %v", index, err)
		return err
	}
	return f.applyDecoded(index, c)
}

// applyDecoded applies the decoded command of log entry index (0: no
// entry, in tests) and returns Apply's result.
func (f *FSM) applyDecoded(index uint64, c Command) any {
	res, err := f.apply(index, c)
	if err != nil {
		if errors.Is(err, ErrBadCommand) || errors.Is(err, storage.ErrInvalid) || errors.Is(err, storage.ErrUnsealed) {
			return err // the command's fault: every replica refuses it alike
		}
		// Not the command's fault: this replica's storage failed.
		err = fmt.Errorf("log entry %d not applied: %w", index, err)
		if f.storeErr.CompareAndSwap(nil, &err) {
			f.logf("coordinator: %v; this replica applies nothing more until it restarts", err)
			if f.onStoreError != nil {
				f.onStoreError(err)
			}
		}
		return err
	}
	if index != 0 {
		f.setApplied(index)
	}
	if f.onApplied != nil {
		f.onApplied(c, res)
	}
	return res
}

// OnApplied sets what hears of each command this replica applied, with
// its result, on the applying goroutine: the replica's counters of what
// its database did (scheduled cuts, retention), which then hold however
// long the leader waited for the apply. Set it before the FSM applies
// anything; fn must not block.
func (f *FSM) OnApplied(fn func(Command, any)) { f.onApplied = fn }

// StoreFailed is the storage failure that stopped the FSM applying, nil
// while it applies.
func (f *FSM) StoreFailed() error {
	if p := f.storeErr.Load(); p != nil {
		return *p
	}
	return nil
}

// OnStoreError sets what hears of the FSM's first storage failure (the
// replica stops). Set it before the FSM applies anything.
func (f *FSM) OnStoreError(fn func(error)) { f.onStoreError = fn }

// MetaVersion changes whenever an applied entry or a restore has changed
// the nodes, the epochs or their acknowledgements: what a reader of only
// those read at one version holds until the next. Read it before reading
// them.
func (f *FSM) MetaVersion() uint64 { return f.metaVersion.Load() }

// setApplied records that the database reflects log entries through index.
func (f *FSM) setApplied(index uint64) {
	f.mu.Lock()
	f.applied = index
	f.mu.Unlock()
}

// apply decides c's effect from the database as it stands (rules.go) and
// carries it out.
func (f *FSM) apply(index uint64, c Command) (any, error) {
	e, err := decide(f.db, c)
	if err != nil {
		return nil, err
	}
	return f.write(index, e)
}

// write carries out e in one Pebble batch, with log index (0: none, in
// tests), and returns Apply's result. Nothing is written if it fails.
func (f *FSM) write(index uint64, e effect) (any, error) {
	m, err := e.meta(index)
	if err != nil {
		return nil, err
	}
	if e.ingest {
		return f.ingest(e.deltas, &m)
	}
	if e.pathUpload != nil {
		out, err := f.db.ApplyPathUploadWith(e.pathUpload, &m)
		if err != nil {
			if errors.Is(err, storage.ErrInvalid) {
				return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
			}
			return nil, fmt.Errorf("coordinator: upload paths: %w", err)
		}
		return out, nil
	}
	if e.values != nil {
		out, err := f.db.ApplyValuesWith(e.valuesFirst, e.values, &m)
		if err != nil {
			if errors.Is(err, storage.ErrInvalid) {
				return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
			}
			return nil, fmt.Errorf("coordinator: ingest values: %w", err)
		}
		return out, nil
	}
	if e.merge != nil || e.expire != 0 {
		return f.retain(e, &m)
	}
	if err := f.db.CommitMeta(&m); err != nil {
		return nil, fmt.Errorf("coordinator: apply: %w", err)
	}
	if len(e.nodes) > 0 || len(e.epochs) > 0 || len(e.acks) > 0 {
		f.metaVersion.Add(1)
	}
	if e.compact != 0 {
		f.compactSoon(e.compact)
	}
	return e.result, nil
}

// retain carries out e's merge or expiry with m's writes in one Pebble
// batch and compacts the range it removed in the background: the range
// deletions only hide the keys, the compaction gives the space back.
func (f *FSM) retain(e effect, m *storage.Meta) (any, error) {
	var res any
	var lo, hi uint64
	if e.merge != nil {
		out, err := f.db.MergeEpochs(e.merge.First, e.merge.Last, m)
		if err != nil {
			return nil, fmt.Errorf("coordinator: merge epochs %d..%d: %w", e.merge.First, e.merge.Last, err)
		}
		res, lo, hi = MergeResult{Epoch: out.Epoch, Parts: out.Parts}, e.merge.First, e.merge.Last
	} else {
		out, err := f.db.ExpireEpochs(e.expire, m)
		if err != nil {
			return nil, fmt.Errorf("coordinator: expire epochs through %d: %w", e.expire, err)
		}
		res, lo, hi = ExpireResult{Epochs: out.Epochs, Expired: out.Expired, Processes: out.Processes}, 0, e.expire
	}
	f.metaVersion.Add(1)
	f.compactRangeSoon(lo, hi)
	return res, nil
}

// ingest applies deltas with m's writes in one Pebble batch.
func (f *FSM) ingest(deltas []storage.Delta, m *storage.Meta) ([]storage.Outcome, error) {
	out, err := f.db.ApplyDeltasWith(deltas, m)
	if err != nil {
		if errors.Is(err, storage.ErrInvalid) {
			return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
		}
		return nil, fmt.Errorf("coordinator: ingest: %w", err)
	}
	return out, nil
}

// meta encodes e's records, and log index if not 0, for one batch.
func (e *effect) meta(index uint64) (storage.Meta, error) {
	var m storage.Meta
	for _, r := range e.images {
		if err := m.PutImage(r); err != nil {
			return m, fmt.Errorf("%w: %w", ErrBadCommand, err)
		}
	}
	for _, r := range e.processes {
		if err := m.PutProcess(e.processesHost, r); err != nil {
			return m, fmt.Errorf("%w: %w", ErrBadCommand, err)
		}
	}
	for _, n := range e.nodes {
		if err := m.PutNode(n); err != nil {
			return m, fmt.Errorf("%w: %w", ErrBadCommand, err)
		}
	}
	for _, ep := range e.epochs {
		if err := m.PutEpoch(ep); err != nil {
			return m, fmt.Errorf("coordinator: apply: %w", err)
		}
	}
	for _, a := range e.acks {
		if err := m.PutEpochAck(a); err != nil {
			return m, fmt.Errorf("%w: %w", ErrBadCommand, err)
		}
	}
	if index != 0 {
		m.SetLogIndex(index)
	}
	return m, nil
}

var _ raft.FSM = (*FSM)(nil)
var _ io.Closer = (*FSM)(nil)
