package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"

	"dcpi/internal/bincodec"
	"dcpi/wire"
)

// The coordinator's registry: fleet nodes, their epoch acknowledgements and
// the Raft log index the database reflects. storage owns only the records'
// encoding and atomic commit; what they mean (liveness, the sealing rule)
// is the coordinator's.

// Caps on registry records, checked before writing.
const (
	MaxLabels      = 64
	MaxLabelKeyLen = 128          // bytes
	MaxLabelValLen = 1024         // bytes
	MaxCPUs        = wire.AllCPUs // CPUs are numbered 0..MaxCPUs-1; AllCPUs names the daemon's stream
	MaxPeriods     = 256          // one per event number (a uint8)
)

// Node is a registered host of the fleet.
type Node struct {
	Host       string
	Labels     map[string]string // e.g. "rack": "r12"; nil or empty when none
	CPUs       int
	Registered time.Time // first registration (the leader's clock)
	Updated    time.Time // latest registration
	// Periods is, per event number, how many events each of the host's
	// samples stands for: its counter's mean sampling period times the
	// number of events multiplexed on that counter, as the host was
	// configured when it registered. nil for a host registered before
	// nodes recorded them (record version 1).
	Periods map[uint8]uint64
}

// EpochAck is a node's acknowledgement that it has flushed everything it
// sampled in an epoch (DCPI sec. 4.3.3 keeps epochs disjoint).
type EpochAck struct {
	Epoch uint64
	Host  string
	// LastSeq[i] is the last batch Seq the node published into the epoch
	// on CPU i's stream (0: none). If len(LastSeq) == the node's CPUs+1,
	// the last element is the daemon's AllCPUs stream.
	LastSeq []uint64
	At      time.Time // when the ack was applied (the leader's clock)
	// Late: the epoch was already sealed when the ack came (the node was
	// away); its batches still land in the epoch.
	Late bool
}

// StreamCPU is the CPU of ack.LastSeq[i] for a node of cpus CPUs.
func StreamCPU(i, cpus int) uint16 {
	if i == cpus {
		return wire.AllCPUs
	}
	return uint16(i)
}

// Table prefixes of the registry (doc.go has the schema).
const (
	tNodes = 'n'
	tAcks  = 'k'
)

var logIndexKey = []byte{tMeta, 'l', 'o', 'g', 'i', 'n', 'd', 'e', 'x'}

func nodeKey(host string) []byte { return appendHost([]byte{tNodes}, host) }

func ackKey(epoch uint64, host string) []byte {
	return appendHost(appendU64([]byte{tAcks}, epoch), host)
}

// Meta collects metadata writes (epochs, images, nodes, acks, the log
// index) to commit atomically: alone with CommitMeta, or with counts with
// ApplyDeltasWith. Each Put checks and encodes its record at once, so a bad
// record fails there and never reaches a commit. The zero value is empty.
type Meta struct {
	ops []metaOp
}

type metaOp struct{ key, val []byte }

// Len is the number of writes collected.
func (m *Meta) Len() int { return len(m.ops) }

func (m *Meta) set(k, v []byte) { m.ops = append(m.ops, metaOp{k, v}) }

// PutEpoch adds an epoch record.
func (m *Meta) PutEpoch(e Epoch) error {
	v, err := encodeEpoch(&e)
	if err != nil {
		return fmt.Errorf("storage: put epoch: %w", err)
	}
	m.set(epochKey(e.Number), v)
	return nil
}

// PutImage adds an image record.
func (m *Meta) PutImage(r *wire.ImageRecord) error {
	v, err := r.MarshalBinary()
	if err != nil {
		return fmt.Errorf("storage: put image: %w", err)
	}
	m.set(imageKey(r.Key), v)
	return nil
}

// PutNode adds a node record.
func (m *Meta) PutNode(n Node) error {
	v, err := encodeNode(&n)
	if err != nil {
		return fmt.Errorf("storage: put node: %w", err)
	}
	m.set(nodeKey(n.Host), v)
	return nil
}

// PutEpochAck adds an acknowledgement, replacing the host's earlier one for
// the epoch.
func (m *Meta) PutEpochAck(a EpochAck) error {
	v, err := encodeAck(&a)
	if err != nil {
		return fmt.Errorf("storage: put epoch ack: %w", err)
	}
	m.set(ackKey(a.Epoch, a.Host), v)
	return nil
}

// SetLogIndex records the index of the replicated-log entry whose writes
// these are, so a restarted replica skips entries its database already
// holds.
func (m *Meta) SetLogIndex(index uint64) {
	m.set(logIndexKey, appendU64(nil, index))
}

// CommitMeta commits m's writes in one Pebble batch.
func (db *DB) CommitMeta(m *Meta) error {
	if err := db.use(true); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if len(m.ops) == 0 {
		return nil
	}
	pb := db.pdb.NewBatch()
	defer pb.Close()
	for _, op := range m.ops {
		if err := pb.Set(op.key, op.val, nil); err != nil {
			return fmt.Errorf("storage: commit meta: %w", err)
		}
	}
	if err := db.commit(pb); err != nil {
		return fmt.Errorf("storage: commit meta: %w", err)
	}
	return nil
}

// LogIndex is the last log index recorded with Meta.SetLogIndex, 0 if none.
func (db *DB) LogIndex() (uint64, error) {
	if err := db.use(false); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	v, ok, err := db.get(logIndexKey)
	if err != nil {
		return 0, fmt.Errorf("storage: log index: %w", err)
	}
	if !ok {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: log index of %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// PutNode stores a node record on its own.
func (db *DB) PutNode(n Node) error {
	var m Meta
	if err := m.PutNode(n); err != nil {
		return err
	}
	return db.CommitMeta(&m)
}

// PutEpochAck stores an acknowledgement on its own.
func (db *DB) PutEpochAck(a EpochAck) error {
	var m Meta
	if err := m.PutEpochAck(a); err != nil {
		return err
	}
	return db.CommitMeta(&m)
}

// Node returns host's record, or an error wrapping ErrNotFound.
func (db *DB) Node(host string) (Node, error) {
	if err := db.use(false); err != nil {
		return Node{}, err
	}
	defer db.mu.RUnlock()
	v, ok, err := db.get(nodeKey(host))
	if err != nil {
		return Node{}, fmt.Errorf("storage: node %q: %w", host, err)
	}
	if !ok {
		return Node{}, fmt.Errorf("storage: node %q: %w", host, ErrNotFound)
	}
	return decodeNode(host, v)
}

// Nodes lists the registered nodes by host name.
func (db *DB) Nodes() ([]Node, error) {
	var out []Node
	err := db.scanPrefix([]byte{tNodes}, func(k, v []byte) error {
		host, rest, ok := cutHost(k[1:])
		if !ok || len(rest) != 0 {
			return fmt.Errorf("%w: node key %x", ErrCorrupt, k)
		}
		n, err := decodeNode(host, v)
		if err != nil {
			return err
		}
		out = append(out, n)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: nodes: %w", err)
	}
	return out, nil
}

// EpochAcks lists epoch's acknowledgements by host name.
func (db *DB) EpochAcks(epoch uint64) ([]EpochAck, error) {
	var out []EpochAck
	err := db.scanPrefix(appendU64([]byte{tAcks}, epoch), func(k, v []byte) error {
		host, rest, ok := cutHost(k[9:])
		if !ok || len(rest) != 0 {
			return fmt.Errorf("%w: ack key %x", ErrCorrupt, k)
		}
		a, err := decodeAck(epoch, host, v)
		if err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: acks of epoch %d: %w", epoch, err)
	}
	return out, nil
}

// EpochAck returns host's acknowledgement of epoch, or an error wrapping
// ErrNotFound.
func (db *DB) EpochAck(epoch uint64, host string) (EpochAck, error) {
	if err := db.use(false); err != nil {
		return EpochAck{}, err
	}
	defer db.mu.RUnlock()
	v, ok, err := db.get(ackKey(epoch, host))
	if err != nil {
		return EpochAck{}, fmt.Errorf("storage: ack of epoch %d by %q: %w", epoch, host, err)
	}
	if !ok {
		return EpochAck{}, fmt.Errorf("storage: ack of epoch %d by %q: %w", epoch, host, ErrNotFound)
	}
	return decodeAck(epoch, host, v)
}

// scanPrefix calls fn for every key with prefix p.
func (db *DB) scanPrefix(p []byte, fn func(k, v []byte) error) error {
	if err := db.use(false); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	it, err := db.newIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	return it.Error()
}

// Record encodings (internal/bincodec): a version byte, then uvarints and
// length-prefixed strings; times are Unix ns as 8 big-endian bytes, 0 for
// the zero time. Node records are version 2 (version 1, still read, ends
// after the labels: no periods).
const (
	nodeRecordVersion   = 2
	nodeRecordVersionV1 = 1
	ackRecordVersion    = 1
)

func checkTime(t time.Time) error {
	if !t.IsZero() && (!time.Unix(0, t.UnixNano()).Equal(t) || t.UnixNano() == 0) {
		return fmt.Errorf("%w: time %v outside 1678..2262", ErrInvalid, t)
	}
	return nil
}

// CheckNode checks a node record as PutNode does.
func CheckNode(n *Node) error {
	if err := wire.CheckHost(n.Host); err != nil {
		return fmt.Errorf("%w: node: %w", ErrInvalid, err)
	}
	if n.CPUs < 1 || n.CPUs > MaxCPUs {
		return fmt.Errorf("%w: node %q: %d CPUs (want 1..%d)", ErrInvalid, n.Host, n.CPUs, MaxCPUs)
	}
	if len(n.Labels) > MaxLabels {
		return fmt.Errorf("%w: node %q: %d labels (cap %d)", ErrInvalid, n.Host, len(n.Labels), MaxLabels)
	}
	for k, v := range n.Labels {
		if k == "" || len(k) > MaxLabelKeyLen || !utf8.ValidString(k) {
			return fmt.Errorf("%w: node %q: label key %q (want 1..%d bytes of UTF-8)", ErrInvalid, n.Host, k, MaxLabelKeyLen)
		}
		if len(v) > MaxLabelValLen || !utf8.ValidString(v) {
			return fmt.Errorf("%w: node %q: label %q: value of %d bytes (want up to %d of UTF-8)", ErrInvalid, n.Host, k, len(v), MaxLabelValLen)
		}
	}
	if err := errors.Join(checkTime(n.Registered), checkTime(n.Updated)); err != nil {
		return fmt.Errorf("node %q: %w", n.Host, err)
	}
	return CheckPeriods(n.Host, n.Periods)
}

// CheckPeriods checks a node's events-per-sample figures: each at least 1.
// (At most MaxPeriods of them: one per event number.)
func CheckPeriods(host string, periods map[uint8]uint64) error {
	for e, p := range periods {
		if p == 0 {
			return fmt.Errorf("%w: node %q: event %d: period 0 (want >= 1 events per sample)", ErrInvalid, host, e)
		}
	}
	return nil
}

// AppendPeriods appends periods as a count and (event, period) pairs in
// event order, so a set of periods has one encoding; DecodePeriods reads it.
func AppendPeriods(b []byte, periods map[uint8]uint64) []byte {
	b = bincodec.AppendUvarint(b, uint64(len(periods)))
	for _, e := range slices.Sorted(maps.Keys(periods)) {
		b = append(b, e)
		b = bincodec.AppendUvarint(b, periods[e])
	}
	return b
}

// DecodePeriods reads what AppendPeriods wrote: nil when there are none.
func DecodePeriods(d *bincodec.Decoder) map[uint8]uint64 {
	n := d.Count("periods", MaxPeriods, 2)
	if n == 0 {
		return nil
	}
	out := make(map[uint8]uint64, n)
	prev := -1
	for i := 0; i < n && d.Err() == nil; i++ {
		e := d.Byte("period event")
		if int(e) <= prev {
			d.Fail(bincodec.ErrMalformed, "period of event %d: not after event %d in order", e, prev)
			break
		}
		p := d.Uvarint("period")
		if p == 0 && d.Err() == nil {
			d.Fail(bincodec.ErrMalformed, "period of event %d: 0", e)
			break
		}
		out[e], prev = p, int(e)
	}
	return out
}

func encodeNode(n *Node) ([]byte, error) {
	if err := CheckNode(n); err != nil {
		return nil, err
	}
	b := []byte{nodeRecordVersion}
	b = bincodec.AppendUvarint(b, uint64(n.CPUs))
	b = bincodec.AppendTime(b, n.Registered)
	b = bincodec.AppendTime(b, n.Updated)
	b = bincodec.AppendUvarint(b, uint64(len(n.Labels)))
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		b = bincodec.AppendString(bincodec.AppendString(b, k), n.Labels[k])
	}
	return AppendPeriods(b, n.Periods), nil
}

// decodeNode reads a node record. Labels come in key order, as encodeNode
// writes them, so a stored record has one encoding.
func decodeNode(host string, v []byte) (Node, error) {
	d := bincodec.NewDecoder(v, 0)
	n := Node{Host: host}
	ver := d.Byte("record version")
	if d.Err() == nil && ver != nodeRecordVersion && ver != nodeRecordVersionV1 {
		return n, fmt.Errorf("%w: node %q: record version %d (this build reads %d and %d)", ErrCorrupt, host, ver, nodeRecordVersionV1, nodeRecordVersion)
	}
	n.CPUs = int(d.UvarintMax("cpus", MaxCPUs))
	n.Registered = d.Time("registered")
	n.Updated = d.Time("updated")
	nl := d.Count("labels", MaxLabels, 2)
	if nl > 0 {
		n.Labels = make(map[string]string, nl)
	}
	prev := ""
	for i := 0; i < nl && d.Err() == nil; i++ {
		k := d.String("label key", MaxLabelKeyLen)
		if i > 0 && k <= prev {
			d.Fail(bincodec.ErrMalformed, "label %q: not after %q in key order", k, prev)
		}
		n.Labels[k] = d.String("label value", MaxLabelValLen)
		prev = k
	}
	if ver == nodeRecordVersion {
		n.Periods = DecodePeriods(d)
	}
	d.End()
	if err := d.Err(); err != nil {
		return n, fmt.Errorf("%w: node %q: %w", ErrCorrupt, host, err)
	}
	if err := CheckNode(&n); err != nil {
		return n, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return n, nil
}

// CheckEpochAck checks an acknowledgement as PutEpochAck does.
func CheckEpochAck(a *EpochAck) error {
	if err := wire.CheckHost(a.Host); err != nil {
		return fmt.Errorf("%w: epoch ack: %w", ErrInvalid, err)
	}
	if len(a.LastSeq) > MaxCPUs+1 {
		return fmt.Errorf("%w: epoch %d ack by %q: %d streams (cap %d)", ErrInvalid, a.Epoch, a.Host, len(a.LastSeq), MaxCPUs+1)
	}
	if err := checkTime(a.At); err != nil {
		return fmt.Errorf("epoch %d ack by %q: %w", a.Epoch, a.Host, err)
	}
	return nil
}

func encodeAck(a *EpochAck) ([]byte, error) {
	if err := CheckEpochAck(a); err != nil {
		return nil, err
	}
	b := []byte{ackRecordVersion, 0}
	if a.Late {
		b[1] = 1
	}
	b = bincodec.AppendTime(b, a.At)
	b = bincodec.AppendUvarint(b, uint64(len(a.LastSeq)))
	for _, s := range a.LastSeq {
		b = bincodec.AppendUvarint(b, s)
	}
	return b, nil
}

func decodeAck(epoch uint64, host string, v []byte) (EpochAck, error) {
	d := bincodec.NewDecoder(v, 0)
	a := EpochAck{Epoch: epoch, Host: host}
	if ver := d.Byte("record version"); d.Err() == nil && ver != ackRecordVersion {
		return a, fmt.Errorf("%w: epoch %d ack by %q: record version %d (this build reads %d)", ErrCorrupt, epoch, host, ver, ackRecordVersion)
	}
	flags := d.Byte("flags")
	if flags&^1 != 0 {
		d.Fail(bincodec.ErrMalformed, "flags %#x: unknown bits", flags)
	}
	a.Late = flags&1 != 0
	a.At = d.Time("at")
	n := d.Count("last seqs", MaxCPUs+1, 1)
	if n > 0 {
		a.LastSeq = make([]uint64, n)
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		a.LastSeq[i] = d.Uvarint("last seq")
	}
	d.End()
	if err := d.Err(); err != nil {
		return a, fmt.Errorf("%w: epoch %d ack by %q: %w", ErrCorrupt, epoch, host, err)
	}
	if err := CheckEpochAck(&a); err != nil {
		return a, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return a, nil
}
