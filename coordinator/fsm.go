package coordinator

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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

	cmu        sync.Mutex // guards compacting and again
	compacting bool       // a background Compact is running
	again      bool       // another epoch was sealed meanwhile
	cwg        sync.WaitGroup
}

// FSM results other than errors: Apply returns []storage.Outcome for an
// Ingest, the new epoch's number for a CutEpoch, an AckResult for an
// AckEpoch, and nil for the others. A command that breaks a rule returns an
// error wrapping ErrBadCommand, having changed nothing.

// AckResult is the FSM's answer to an AckEpoch.
type AckResult struct{ Late bool }

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

// compactSoon starts a full compaction of the database in the background
// (one at a time; a seal during one asks for one more after it), so that
// fleet-wide queries over a sealed epoch read one value per key rather than
// summing the merge operands of every ingest (storage.DB.Compact). Every
// replica does it when it applies a SealEpoch, leader or not: the sealed
// epoch will get (almost) no more samples, so its keys are compacted once
// and stay that way. It never holds up Apply: the compaction runs on its
// own goroutine beside ingest, takes no FSM lock (a Restore that swaps the
// database closes the old one, which ends a compaction of it), and changes
// no content, so replicas stay identical whenever it runs.
func (f *FSM) compactSoon() {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	if f.compacting {
		f.again = true
		return
	}
	f.compacting = true
	f.cwg.Add(1)
	go func() {
		defer f.cwg.Done()
		for {
			db := f.DB()
			start := time.Now()
			if err := db.Compact(); err == nil {
				f.logf("coordinator: compacted the profile database in %v", time.Since(start).Round(time.Millisecond))
			} else if !errors.Is(err, storage.ErrClosed) {
				f.logf("coordinator: compact: %v", err)
			}
			f.cmu.Lock()
			if !f.again {
				f.compacting = false
				f.cmu.Unlock()
				return
			}
			f.again = false
			f.cmu.Unlock()
		}
	}()
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
		if !errors.Is(err, ErrBadCommand) {
			// Not the command's fault: a storage failure.
			f.logf("coordinator: log entry %d: %v", index, err)
		}
		return err
	}
	if index != 0 {
		f.setApplied(index)
	}
	return res
}

// setApplied records that the database reflects log entries through index.
func (f *FSM) setApplied(index uint64) {
	f.mu.Lock()
	f.applied = index
	f.mu.Unlock()
}

func (f *FSM) apply(index uint64, c Command) (any, error) {
	db := f.db
	var m storage.Meta
	if index != 0 {
		m.SetLogIndex(index)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadCommand, fmt.Sprintf(format, args...))
	}
	switch c := c.(type) {
	case *Ingest:
		// Images are content-addressed: storing one again is harmless.
		for _, r := range c.Images {
			if err := m.PutImage(r); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
			}
		}
		out, err := db.ApplyDeltasWith(c.Deltas, &m)
		if err != nil {
			if errors.Is(err, storage.ErrInvalid) {
				return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
			}
			return nil, fmt.Errorf("coordinator: ingest: %w", err)
		}
		return out, nil

	case *RegisterNode:
		n := storage.Node{Host: c.Host, Labels: c.Labels, CPUs: c.CPUs, Registered: c.At, Updated: c.At}
		old, err := db.Node(c.Host)
		switch {
		case err == nil:
			n.Registered = old.Registered
		case !errors.Is(err, storage.ErrNotFound):
			return nil, fmt.Errorf("coordinator: register %q: %w", c.Host, err)
		}
		if err := m.PutNode(n); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
		}
		if err := startEpochs(db, &m, c.At); err != nil {
			return nil, err
		}
		return nil, f.commit(&m)

	case *StartEpochs:
		if err := startEpochs(db, &m, c.At); err != nil {
			return nil, err
		}
		return nil, f.commit(&m)

	case *CutEpoch:
		eps, err := db.Epochs()
		if err != nil {
			return nil, fmt.Errorf("coordinator: cut: %w", err)
		}
		next, start := uint64(1), c.At
		if len(eps) > 0 {
			next = eps[len(eps)-1].Number + 1
		}
		if e, ok := openEpoch(eps); ok {
			// A new leader's clock may be behind the old one's; an
			// epoch never ends before it starts.
			e.State, e.End = storage.EpochClosing, c.At
			if e.End.Before(e.Start) {
				e.End = e.Start
			}
			start = e.End
			if err := m.PutEpoch(e); err != nil {
				return nil, fmt.Errorf("coordinator: cut: %w", err)
			}
		}
		if err := m.PutEpoch(storage.Epoch{Number: next, Start: start, State: storage.EpochOpen}); err != nil {
			return nil, fmt.Errorf("coordinator: cut: %w", err)
		}
		return next, f.commit(&m)

	case *AckEpoch:
		e, err := db.Epoch(c.Epoch)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, bad("ack by %q: no epoch %d", c.Host, c.Epoch)
		} else if err != nil {
			return nil, fmt.Errorf("coordinator: ack: %w", err)
		}
		if e.State == storage.EpochOpen {
			return nil, bad("ack by %q: epoch %d is open (not cut)", c.Host, c.Epoch)
		}
		n, err := db.Node(c.Host)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, bad("ack of epoch %d: host %q is not registered", c.Epoch, c.Host)
		} else if err != nil {
			return nil, fmt.Errorf("coordinator: ack: %w", err)
		}
		if len(c.LastSeq) > n.CPUs+1 {
			return nil, bad("ack of epoch %d by %q: %d streams for %d CPUs", c.Epoch, c.Host, len(c.LastSeq), n.CPUs)
		}
		a := storage.EpochAck{Epoch: c.Epoch, Host: c.Host, LastSeq: c.LastSeq, At: c.At, Late: e.State == storage.EpochSealed}
		if a.Late {
			// A repeat of an ack the seal already counted is not late.
			if old, err := db.EpochAck(c.Epoch, c.Host); err == nil && slices.Equal(old.LastSeq, c.LastSeq) {
				return AckResult{Late: old.Late}, f.commit(&m)
			}
		}
		if err := m.PutEpochAck(a); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
		}
		return AckResult{Late: a.Late}, f.commit(&m)

	case *SealEpoch:
		e, err := db.Epoch(c.Epoch)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, bad("seal: no epoch %d", c.Epoch)
		} else if err != nil {
			return nil, fmt.Errorf("coordinator: seal: %w", err)
		}
		switch e.State {
		case storage.EpochOpen:
			return nil, bad("seal: epoch %d is open (not cut)", c.Epoch)
		case storage.EpochClosing:
			e.State = storage.EpochSealed
			if err := m.PutEpoch(e); err != nil {
				return nil, fmt.Errorf("coordinator: seal: %w", err)
			}
			if err := f.commit(&m); err != nil {
				return nil, err
			}
			f.compactSoon()
			return nil, nil
		}
		return nil, f.commit(&m)
	}
	return nil, bad("unknown command %T", c)
}

func (f *FSM) commit(m *storage.Meta) error {
	if err := f.db.CommitMeta(m); err != nil {
		return fmt.Errorf("coordinator: apply: %w", err)
	}
	return nil
}

// startEpochs adds epoch 1, open from at, to m if there is no epoch.
func startEpochs(db *storage.DB, m *storage.Meta, at time.Time) error {
	eps, err := db.Epochs()
	if err != nil {
		return fmt.Errorf("coordinator: epochs: %w", err)
	}
	if len(eps) > 0 {
		return nil
	}
	if err := m.PutEpoch(storage.Epoch{Number: 1, Start: at, State: storage.EpochOpen}); err != nil {
		return fmt.Errorf("coordinator: start epochs: %w", err)
	}
	return nil
}

// openEpoch is the open epoch: the last, if it is open.
func openEpoch(eps []storage.Epoch) (storage.Epoch, bool) {
	for i := len(eps) - 1; i >= 0; i-- {
		if eps[i].State == storage.EpochOpen {
			return eps[i], true
		}
	}
	return storage.Epoch{}, false
}

var _ raft.FSM = (*FSM)(nil)
var _ io.Closer = (*FSM)(nil)
