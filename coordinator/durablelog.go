package coordinator

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/hashicorp/raft"
)

// ErrCorruptEntry is returned for a Raft log entry whose checksum does not
// match what was written: the disk or the file system changed it.
var ErrCorruptEntry = errors.New("coordinator: corrupt raft log entry")

// ErrReplicaFailed wraps the error that stopped a replica for good: a
// failed write or fsync of its Raft log or stable store, or a corrupt
// entry. Nothing is written after it; the operator must look at the disk,
// then remove the replica's directory and add it back (docs/durability.md).
var ErrReplicaFailed = errors.New("coordinator: replica failed")

// walStore is what the Raft log and stable store are (raft-wal's WAL).
type walStore interface {
	raft.LogStore
	raft.StableStore
}

// entrySumMagic starts the checksum a durableLog keeps in an entry's
// Extensions: 4 bytes of magic, then the CRC-32C of the entry.
var entrySumMagic = []byte("dcC1")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entrySum is the CRC-32C of what Raft and the FSM read back of an entry:
// its index, term, type and data.
func entrySum(l *raft.Log) uint32 {
	var hdr [17]byte
	binary.LittleEndian.PutUint64(hdr[0:], l.Index)
	binary.LittleEndian.PutUint64(hdr[8:], l.Term)
	hdr[16] = byte(l.Type)
	return crc32.Update(crc32.Checksum(hdr[:], castagnoli), castagnoli, l.Data)
}

// durableLog is the replica's Raft log and stable store over raft-wal,
// with the two properties raft-wal does not give on its own:
//
//   - Every entry is checksummed when written and verified when read.
//     raft-wal checks its frames' CRCs only when it recovers the tail
//     segment; a bit flipped in a sealed segment would be handed to Raft
//     and applied. The checksum travels in the entry's Extensions (which
//     raft-wal stores and Raft does not interpret), set on a copy when
//     storing and cleared after verifying, so Raft never sees it and never
//     replicates it. An entry written before this existed has no checksum
//     and is read unverified.
//   - A failed write, fsync or read check is fatal. After an fsync error
//     the kernel may have dropped the dirty pages and a retried fsync can
//     succeed with the data gone (PostgreSQL's "fsyncgate"); Raft would
//     retry a follower's failed append, and a leader steps down and may be
//     elected again on the same log. So the first failure is kept, every
//     later write returns it without touching the disk, and onFatal stops
//     the replica.
type durableLog struct {
	inner   walStore
	onFatal func(error)

	mu    sync.Mutex
	fatal error
}

func newDurableLog(inner walStore, onFatal func(error)) *durableLog {
	return &durableLog{inner: inner, onFatal: onFatal}
}

// failed returns the fatal error, if any.
func (d *durableLog) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fatal
}

// fail makes err fatal (the first one wins) and returns the error to give
// the caller.
func (d *durableLog) fail(what string, err error) error {
	d.mu.Lock()
	first := d.fatal == nil
	if first {
		d.fatal = fmt.Errorf("%w: %s: %w", ErrReplicaFailed, what, err)
	}
	fatal := d.fatal
	d.mu.Unlock()
	if first && d.onFatal != nil {
		d.onFatal(fatal)
	}
	return fatal
}

// write runs op unless the log has failed, and makes its error fatal.
func (d *durableLog) write(what string, op func() error) error {
	if err := d.failed(); err != nil {
		return err
	}
	if err := op(); err != nil {
		return d.fail(what, err)
	}
	return nil
}

func (d *durableLog) FirstIndex() (uint64, error) { return d.inner.FirstIndex() }
func (d *durableLog) LastIndex() (uint64, error)  { return d.inner.LastIndex() }

// GetLog reads entry index and verifies its checksum.
func (d *durableLog) GetLog(index uint64, l *raft.Log) error {
	if err := d.inner.GetLog(index, l); err != nil {
		return err
	}
	ext := l.Extensions
	if len(ext) != len(entrySumMagic)+4 || !bytes.HasPrefix(ext, entrySumMagic) {
		return nil // written before entries had checksums
	}
	want := binary.LittleEndian.Uint32(ext[len(entrySumMagic):])
	l.Extensions = nil
	if got := entrySum(l); got != want || l.Index != index {
		return d.fail("read", fmt.Errorf("%w: index %d (read as index %d, term %d): checksum %08x, written %08x",
			ErrCorruptEntry, index, l.Index, l.Term, got, want))
	}
	return nil
}

func (d *durableLog) StoreLog(l *raft.Log) error { return d.StoreLogs([]*raft.Log{l}) }

// StoreLogs writes copies of logs with their checksums.
func (d *durableLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	sealed := make([]*raft.Log, len(logs))
	for i, l := range logs {
		c := *l
		c.Extensions = binary.LittleEndian.AppendUint32(append([]byte(nil), entrySumMagic...), entrySum(l))
		sealed[i] = &c
	}
	return d.write(fmt.Sprintf("store log entries %d-%d", logs[0].Index, logs[len(logs)-1].Index),
		func() error { return d.inner.StoreLogs(sealed) })
}

func (d *durableLog) DeleteRange(min, max uint64) error {
	return d.write(fmt.Sprintf("delete log entries %d-%d", min, max), func() error { return d.inner.DeleteRange(min, max) })
}

func (d *durableLog) Set(key, val []byte) error {
	return d.write("stable store set "+string(key), func() error { return d.inner.Set(key, val) })
}

func (d *durableLog) Get(key []byte) ([]byte, error) { return d.inner.Get(key) }

func (d *durableLog) SetUint64(key []byte, val uint64) error {
	return d.write("stable store set "+string(key), func() error { return d.inner.SetUint64(key, val) })
}

func (d *durableLog) GetUint64(key []byte) (uint64, error) { return d.inner.GetUint64(key) }

var _ walStore = (*durableLog)(nil)
