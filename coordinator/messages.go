package coordinator

import (
	"errors"
	"fmt"
	"time"

	"dcpi/internal/bincodec"
	"dcpi/storage"
	"dcpi/wire"
)

// Reply headers carrying an error: its text and its class.
const (
	HeaderError     = "Dcpi-Error"
	HeaderErrorCode = "Dcpi-Error-Code"
)

// Error classes a reply can carry; the client's errors wrap the matching
// sentinel.
const (
	codeNotLeader  = "not-leader"  // nothing was proposed: retry elsewhere
	codeUnknown    = "unknown"     // proposed, but the commit was not seen
	codeBadRequest = "bad-request" // the request breaks a rule: do not retry
	codeInternal   = "internal"
)

// Sentinel errors of the service.
var (
	// ErrNotLeader: this replica is not the leader (or is shutting down);
	// nothing was proposed.
	ErrNotLeader = errors.New("coordinator: not the leader")
	// ErrUnknownOutcome: a proposal was made but its commit was not seen
	// (leadership lost, timeout); it may or may not have been applied.
	ErrUnknownOutcome = errors.New("coordinator: outcome unknown")
	// ErrBadRequest: the request is malformed or breaks a rule; it changed
	// nothing.
	ErrBadRequest = errors.New("coordinator: bad request")
	// ErrInternal: the replica failed (storage, raft).
	ErrInternal = errors.New("coordinator: internal error")
)

// RegisterRequest registers a node.
type RegisterRequest struct {
	Host   string
	Labels map[string]string
	CPUs   int
	// Periods: events per sample per event (storage.Node.Periods);
	// absent from a node of an earlier build.
	Periods map[uint8]uint64 `json:",omitempty"`
}

// HeartbeatRequest is a node's sign of life.
type HeartbeatRequest struct{ Host string }

// EpochStatus tells a node where epochs stand: the current (newest) epoch,
// and the closing epochs it has still to flush into and acknowledge.
type EpochStatus struct {
	Epoch      uint64
	State      storage.EpochState
	Start      time.Time
	Pending    []uint64 // closing epochs this host has not acknowledged
	Registered bool     // false: the host must register (again)
	// Reads is the newest batch format (wire.Version) the leader's build
	// reads, so that a node newer than the cluster refuses to start
	// (CheckBatchFormat) rather than publish batches the cluster would
	// reject. Zero from a leader of an earlier build, which did not say.
	Reads uint16 `json:",omitempty"`
}

// ErrNewerNode: a node writes a batch format the cluster's build does not
// read.
var ErrNewerNode = errors.New("node newer than the cluster")

// CheckBatchFormat is a node's check, at start, of the batch format it
// writes (node.Config.BatchFormat) against what the cluster's leader
// said it reads: an older cluster is refused in one line saying what to
// upgrade first. A leader that did not say (reads 0) is served: such a
// cluster predates the check, and its formats are those of its time.
func CheckBatchFormat(host string, writes, reads uint16) error {
	if reads == 0 || writes <= reads {
		return nil
	}
	return fmt.Errorf("host %s: %w: its batches take format version %d, the cluster's coordinator reads up to version %d; upgrade the coordinator replicas and the aggregators before the nodes (docs/deploy.md, Upgrade)", host, ErrNewerNode, writes, reads)
}

// AckRequest acknowledges an epoch (storage.EpochAck).
type AckRequest struct {
	Host    string
	Epoch   uint64
	LastSeq []uint64
}

// AckReply answers an ack.
type AckReply struct{ Late bool }

// CutReply names the epoch a cut opened.
type CutReply struct{ Epoch uint64 }

// MemberRequest adds or removes a replica.
type MemberRequest struct{ ID, Addr string }

// EpochInfo is an epoch with its acknowledgements and, while it is closing,
// what sealing waits for. Waiting uses the answering replica's view of
// liveness: the leader's, or on a follower every node counted live.
type EpochInfo struct {
	storage.Epoch
	Acks    []storage.EpochAck
	Waiting []string
}

// NodeInfo is a registered node with its liveness, when the answering
// replica is the leader (LivenessKnown).
type NodeInfo struct {
	storage.Node
	LivenessKnown bool
	Live          bool
	LastHeartbeat time.Time // zero if none seen by this leader
}

// ImagesRequest asks for image records by key.
type ImagesRequest struct{ Keys []wire.ImageKey }

// ImagesReply carries the records found (wire encoding), in request order,
// as many as fit in one reply; Next is the index of the first key not
// looked at (len(Keys) when done).
type ImagesReply struct {
	Records [][]byte
	Next    int
}

// AppliedRequest asks for a stream's applied Seq, or, with CPUs, for
// the applied Seq of each of those streams of the host in one reply (a
// node's end-to-end acknowledgment asks about all its retaining streams
// at once: one request per host per poll, not one per CPU). A server
// that predates CPUs ignores it and answers for CPU alone, without
// Streams, which the client takes as its cue to ask per CPU.
type AppliedRequest struct {
	Host string
	CPU  uint16
	CPUs []uint16 `json:",omitempty"`
}

// MaxAppliedCPUs bounds an AppliedRequest's CPUs, so one request cannot
// make a replica read an unbounded number of streams.
const MaxAppliedCPUs = 1024

// AppliedReply carries it, with the sample accounting of the batch that
// applied it (storage.StreamState); for a request with CPUs, Streams
// holds their applied Seqs in the request's order.
type AppliedReply struct {
	Seq, Delivered, Accounted uint64
	Streams                   []StreamApplied `json:",omitempty"`
}

// StreamApplied is one stream's applied Seq in an AppliedReply.
type StreamApplied struct {
	CPU uint16
	Seq uint64
}

// TotalsReply is storage.Totals.
type TotalsReply struct {
	Samples, Unknown uint64
	Drops            map[string]uint64
	// The stack view (storage.DB.StackTotals): samples counted by call
	// stacks and each stack drop counter. Zero where no node recorded
	// stacks.
	StackSamples uint64            `json:",omitempty"`
	StackDrops   map[string]uint64 `json:",omitempty"`
	// The ProfileMe view (storage.DB.MeTotals): samples stored in
	// entries and as unknown, and each ProfileMe drop counter. Zero where
	// no node ran ProfileMe.
	MeSamples, MeUnknown uint64            `json:",omitempty"`
	MeDrops              map[string]uint64 `json:",omitempty"`
	// Expired is what the retention policy deleted, view by view
	// (storage.DB.ExpiredTotals): generated = stored + dropped +
	// expired. Zero where nothing expired, and from a replica of a build
	// before retention.
	Expired storage.Expired `json:",omitzero"`
}

// ProfileRequest asks for one page of storage.Profile rows after a position.
type ProfileRequest struct {
	Query   storage.Query
	After   *storage.ProfileKey
	MaxRows int // 0: the server's page size
}

// Pages of profile rows stay well under NATS's default 1 MB payload.
const (
	pageRows  = 50_000
	pageBytes = 512 << 10
)

// ProfileRow is one row of a profile page.
type ProfileRow struct {
	Image  wire.ImageKey
	Offset uint64
	Event  uint8
	Host   string
	Count  uint64
}

// profile page encoding: version, flags (bit 0: last page), the replica's
// ID, the row count, then rows; a row's flags say whether its image and
// host differ from the previous row's (rows come sorted, so they rarely do).
const pageVersion = 1

type pageEncoder struct {
	e    bincodec.Encoder
	n    int
	img  wire.ImageKey
	host string
}

func (p *pageEncoder) add(r ProfileRow) {
	var fl byte
	if p.n == 0 || r.Image != p.img {
		fl |= 1
	}
	if p.n == 0 || r.Host != p.host {
		fl |= 2
	}
	p.e.Byte(fl)
	if fl&1 != 0 {
		p.e.Raw(r.Image[:])
	}
	if fl&2 != 0 {
		p.e.String(r.Host)
	}
	p.e.Byte(r.Event)
	p.e.Uvarint(r.Offset)
	p.e.Uvarint(r.Count)
	p.img, p.host = r.Image, r.Host
	p.n++
}

// size is the bytes of rows encoded so far.
func (p *pageEncoder) size() int { return len(p.e.B) }

func (p *pageEncoder) finish(replica string, last bool) []byte {
	var h bincodec.Encoder
	h.Byte(pageVersion)
	if last {
		h.Byte(1)
	} else {
		h.Byte(0)
	}
	h.String(replica)
	h.Uvarint(uint64(p.n))
	return append(h.B, p.e.B...)
}

type profilePage struct {
	replica string
	last    bool
	rows    []ProfileRow
}

func decodePage(b []byte) (*profilePage, error) {
	d := bincodec.NewDecoder(b, 0)
	if v := d.Byte("version"); d.Err() == nil && v != pageVersion {
		return nil, fmt.Errorf("%w: profile page version %d", ErrInternal, v)
	}
	p := &profilePage{}
	p.last = d.Byte("flags")&1 != 0
	p.replica = d.String("replica", 1024)
	n := d.Count("rows", pageRows*4, 4)
	p.rows = make([]ProfileRow, 0, n)
	var cur ProfileRow
	for i := 0; i < n && d.Err() == nil; i++ {
		fl := d.Byte("row flags")
		if i == 0 && fl&3 != 3 {
			d.Fail(bincodec.ErrMalformed, "first row without image and host")
		}
		if fl&1 != 0 {
			copy(cur.Image[:], d.Bytes("image", len(cur.Image)))
		}
		if fl&2 != 0 {
			cur.Host = d.String("host", wire.MaxHostLen)
		}
		cur.Event = d.Byte("event")
		cur.Offset = d.Uvarint("offset")
		cur.Count = d.Uvarint("count")
		p.rows = append(p.rows, cur)
	}
	d.End()
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: malformed profile page: %w", ErrInternal, err)
	}
	return p, nil
}
