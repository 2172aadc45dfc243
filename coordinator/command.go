package coordinator

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"dcpi/internal/bincodec"
	"dcpi/storage"
	"dcpi/wire"
)

// A Command is one entry of the replicated log: what the FSM applies. Every
// field comes from the proposer — in particular every time is the leader's
// clock, read before proposing — so all replicas apply identical entries to
// identical states and reach identical results.
type Command interface {
	kind() byte
	encode(e *bincodec.Encoder) error
}

// Ingest stores aggregator deltas and image records.
type Ingest struct {
	Deltas []storage.Delta
	Images []*wire.ImageRecord
}

// RegisterNode adds a host to the fleet or updates its labels, CPUs and
// events per sample (storage.Node.Periods; nil from a node of an earlier
// build).
type RegisterNode struct {
	Host    string
	Labels  map[string]string
	CPUs    int
	Periods map[uint8]uint64
	At      time.Time
}

// PutProcesses stores process records (wire.ProcessRecord) of Host. Host
// is the subject's host of the request that carried them (the service's
// per-host check), never a field of the records, so a host's credentials
// store processes of that host only.
type PutProcesses struct {
	Host    string
	Records []*wire.ProcessRecord
}

// CutEpoch closes the open epoch at At and opens the next (DCPI sec. 4.3.3:
// epochs are non-overlapping intervals; here a cut is one log entry, so
// every replica cuts at the same point of the sample stream).
type CutEpoch struct{ At time.Time }

// ScheduledCut is the leader's cut of epoch Epoch because its period is up
// (Schedule): it cuts as CutEpoch does if Epoch is still the open epoch,
// and changes nothing otherwise. Naming the epoch makes the cut
// conditional on the replicated state, so a deposed leader's late
// proposal, a retry whose first attempt did commit, or a hand cut that
// came first cannot cut twice for one period.
type ScheduledCut struct {
	Epoch uint64
	At    time.Time
}

// AckEpoch records that Host has flushed everything it sampled in Epoch:
// LastSeq per stream (storage.EpochAck).
type AckEpoch struct {
	Host    string
	Epoch   uint64
	LastSeq []uint64
	At      time.Time
}

// SealEpoch marks a closing epoch complete.
type SealEpoch struct {
	Epoch uint64
	At    time.Time
}

// StartEpochs opens epoch 1 at At if there is no epoch yet; a new leader
// proposes it, so nodes always find an open epoch.
type StartEpochs struct{ At time.Time }

// UploadPaths merges a host's path profile and calling context tree of one
// image (wire.PathUpload) into the fleet's: storage.ApplyPathUploadWith
// decides, against the upload IDs applied so far, whether it is new,
// a redelivery, or refused; Apply's result is the storage.PathOutcome.
type UploadPaths struct {
	Upload *wire.PathUpload
}

// IngestValues stores a host's value-sampling record (wire.ValuesRecord),
// the merge of its records First..Record.Seq (aggregator.MergeValues):
// storage.ApplyValuesWith decides against the host's last applied Seq, as
// for a delta, and Apply's result is the storage.Outcome.
type IngestValues struct {
	First  uint64
	Record *wire.ValuesRecord
}

// MergeEpochs is the leader's merge of the sealed epochs First..Last into
// epoch First (RetentionDue; storage.DB.MergeEpochs). It applies only if
// every epoch record in the range is sealed and at least one besides
// First is still there; otherwise it changes nothing (a retry whose first
// attempt committed, a deposed leader's late proposal), so a leader change
// cannot merge twice.
type MergeEpochs struct {
	First, Last uint64
}

// ExpireEpochs is the leader's deletion of every epoch through Through,
// what they held counted as expired (RetentionDue;
// storage.DB.ExpireEpochs). It applies only if every epoch through it is
// sealed; with none left it changes nothing.
type ExpireEpochs struct {
	Through uint64
}

// Command encoding: version byte, kind byte, body.
const commandVersion = 1

const (
	kindIngest = 1
	// kindRegisterV1 is RegisterNode before periods: still decoded (logs
	// hold it), no longer written.
	kindRegisterV1 = 2
	kindCut        = 3
	kindAck        = 4
	kindSeal       = 5
	kindStart      = 6
	// kindRegister is RegisterNode: kindRegisterV1's body, then the
	// periods (storage.AppendPeriods).
	kindRegister = 7
	// kindUploadPaths is UploadPaths: the upload's wire encoding as a
	// length-prefixed byte string.
	kindUploadPaths = 8
	// kindIngestValues is IngestValues: First, then the record's wire
	// encoding as a length-prefixed byte string.
	kindIngestValues = 9
	// kindIngestFolds is an Ingest with host folds (storage.Delta.Folded):
	// kindIngest's body with each delta's folded runs after its batch
	// (count, then CPU, First, Last, Delivered, Accounted each). An
	// Ingest without folds is still written as kindIngest, which builds
	// from before folds read.
	kindIngestFolds = 10
	// kindScheduledCut is ScheduledCut: the epoch, then the time. A
	// build from before it refuses the entry, so every replica must run
	// one that knows it before a schedule is configured.
	kindScheduledCut = 11
	// kindMergeEpochs is MergeEpochs: First, then Last; kindExpireEpochs
	// is ExpireEpochs: Through. As for kindScheduledCut, every replica
	// must run a build that knows them before a retention policy is
	// configured.
	kindMergeEpochs  = 12
	kindExpireEpochs = 13
	// kindPutProcesses is PutProcesses: the host, then each record's
	// wire encoding.
	kindPutProcesses = 14
)

// Caps on commands from outside input, beyond those of wire and storage.
const (
	maxDeltas = 1 << 16
	maxImages = 1 << 12
	// MaxProcesses caps the records of one PutProcesses, so a request
	// stays far below a log entry's size.
	MaxProcesses = 1 << 12
)

func (c *Ingest) kind() byte {
	if hasFolds(c.Deltas) {
		return kindIngestFolds
	}
	return kindIngest
}

// hasFolds reports whether any delta is a host fold.
func hasFolds(ds []storage.Delta) bool {
	for i := range ds {
		if len(ds[i].Folded) > 0 {
			return true
		}
	}
	return false
}
func (*RegisterNode) kind() byte { return kindRegister }
func (*CutEpoch) kind() byte     { return kindCut }
func (*ScheduledCut) kind() byte { return kindScheduledCut }
func (*AckEpoch) kind() byte     { return kindAck }
func (*SealEpoch) kind() byte    { return kindSeal }
func (*StartEpochs) kind() byte  { return kindStart }
func (*UploadPaths) kind() byte  { return kindUploadPaths }
func (*IngestValues) kind() byte { return kindIngestValues }
func (*MergeEpochs) kind() byte  { return kindMergeEpochs }
func (*ExpireEpochs) kind() byte { return kindExpireEpochs }
func (*PutProcesses) kind() byte { return kindPutProcesses }

// ErrBadCommand is wrapped by every error about a command's content: the
// command changed nothing.
var ErrBadCommand = errors.New("coordinator: bad command")

// EncodeCommand encodes c after checking it as the FSM will (Check), so a
// proposer learns of a bad command before it reaches the log.
func EncodeCommand(c Command) ([]byte, error) {
	if err := Check(c); err != nil {
		return nil, err
	}
	e := &bincodec.Encoder{B: []byte{commandVersion, c.kind()}}
	if err := c.encode(e); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	return e.B, nil
}

func (c *Ingest) encode(e *bincodec.Encoder) error {
	folds := hasFolds(c.Deltas)
	e.Uvarint(uint64(len(c.Deltas)))
	for i, d := range c.Deltas {
		e.Uvarint(d.Last)
		b, err := d.Batch.MarshalBinary()
		if err != nil {
			return fmt.Errorf("delta %d: %w", i, err)
		}
		e.Bytes(b)
		if folds {
			encodeFolded(e, d.Folded)
		}
	}
	e.Uvarint(uint64(len(c.Images)))
	for i, r := range c.Images {
		b, err := r.MarshalBinary()
		if err != nil {
			return fmt.Errorf("image %d: %w", i, err)
		}
		e.Bytes(b)
	}
	return nil
}

func (c *PutProcesses) encode(e *bincodec.Encoder) error {
	e.String(c.Host)
	e.Uvarint(uint64(len(c.Records)))
	for i, r := range c.Records {
		b, err := r.MarshalBinary()
		if err != nil {
			return fmt.Errorf("process %d: %w", i, err)
		}
		e.Bytes(b)
	}
	return nil
}

// decodePutProcesses decodes a PutProcesses' body; DecodeCommand Checks it.
func decodePutProcesses(d *bincodec.Decoder) *PutProcesses {
	c := &PutProcesses{Host: d.String("host", wire.MaxHostLen)}
	n := d.Count("processes", MaxProcesses, 1)
	for i := 0; i < n && d.Err() == nil; i++ {
		p := d.LenBytes("process", wire.MaxMessageBytes)
		if d.Err() != nil {
			break
		}
		r := new(wire.ProcessRecord)
		if err := r.UnmarshalBinary(p); err != nil {
			d.Fail(bincodec.ErrMalformed, "process %d: %v", i, err)
			break
		}
		c.Records = append(c.Records, r)
	}
	return c
}

// encodeFolded writes a delta's folded runs (kindIngestFolds).
func encodeFolded(e *bincodec.Encoder, runs []storage.StreamRun) {
	e.Uvarint(uint64(len(runs)))
	for _, r := range runs {
		e.Uvarint(uint64(r.CPU))
		e.Uvarint(r.First)
		e.Uvarint(r.Last)
		e.Uvarint(r.Delivered)
		e.Uvarint(r.Accounted)
	}
}

func (c *RegisterNode) encode(e *bincodec.Encoder) error {
	e.String(c.Host)
	e.Uvarint(uint64(c.CPUs))
	e.Time(c.At)
	e.Uvarint(uint64(len(c.Labels)))
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		e.String(k)
		e.String(c.Labels[k])
	}
	e.B = storage.AppendPeriods(e.B, c.Periods)
	return nil
}

func (c *CutEpoch) encode(e *bincodec.Encoder) error { e.Time(c.At); return nil }

func (c *ScheduledCut) encode(e *bincodec.Encoder) error {
	e.Uvarint(c.Epoch)
	e.Time(c.At)
	return nil
}

func (c *MergeEpochs) encode(e *bincodec.Encoder) error {
	e.Uvarint(c.First)
	e.Uvarint(c.Last)
	return nil
}

func (c *ExpireEpochs) encode(e *bincodec.Encoder) error { e.Uvarint(c.Through); return nil }

func (c *AckEpoch) encode(e *bincodec.Encoder) error {
	e.String(c.Host)
	e.Uvarint(c.Epoch)
	e.Uvarint(uint64(len(c.LastSeq)))
	for _, s := range c.LastSeq {
		e.Uvarint(s)
	}
	e.Time(c.At)
	return nil
}

func (c *SealEpoch) encode(e *bincodec.Encoder) error {
	e.Uvarint(c.Epoch)
	e.Time(c.At)
	return nil
}

func (c *StartEpochs) encode(e *bincodec.Encoder) error { e.Time(c.At); return nil }

func (c *UploadPaths) encode(e *bincodec.Encoder) error {
	b, err := c.Upload.MarshalBinary()
	if err != nil {
		return err
	}
	e.Bytes(b)
	return nil
}

func (c *IngestValues) encode(e *bincodec.Encoder) error {
	b, err := c.Record.MarshalBinary()
	if err != nil {
		return err
	}
	e.Uvarint(c.First)
	e.Bytes(b)
	return nil
}

// DecodeCommand decodes and checks a command from outside input (a log
// entry, a request): any failure is an error wrapping ErrBadCommand, never a
// panic. What it returns passes Check.
func DecodeCommand(b []byte) (Command, error) {
	d := bincodec.NewDecoder(b, 0)
	if v := d.Byte("version"); d.Err() == nil && v != commandVersion {
		return nil, fmt.Errorf("%w: version %d (this build reads %d)", ErrBadCommand, v, commandVersion)
	}
	var c Command
	switch k := d.Byte("kind"); k {
	case kindIngest, kindIngestFolds:
		c = decodeIngest(d, k == kindIngestFolds)
	case kindRegister, kindRegisterV1:
		r := &RegisterNode{Host: d.String("host", wire.MaxHostLen)}
		r.CPUs = int(d.UvarintMax("cpus", storage.MaxCPUs))
		r.At = d.Time("at")
		n := d.Count("labels", storage.MaxLabels, 2)
		if n > 0 {
			r.Labels = make(map[string]string, n)
		}
		prev := ""
		for i := 0; i < n && d.Err() == nil; i++ {
			k := d.String("label key", storage.MaxLabelKeyLen)
			if i > 0 && k <= prev {
				d.Fail(bincodec.ErrMalformed, "label %q: not after %q", k, prev)
			}
			r.Labels[k] = d.String("label value", storage.MaxLabelValLen)
			prev = k
		}
		if k == kindRegister {
			r.Periods = storage.DecodePeriods(d)
		}
		c = r
	case kindCut:
		c = &CutEpoch{At: d.Time("at")}
	case kindScheduledCut:
		c = &ScheduledCut{Epoch: d.Uvarint("epoch"), At: d.Time("at")}
	case kindMergeEpochs:
		c = &MergeEpochs{First: d.Uvarint("first"), Last: d.Uvarint("last")}
	case kindExpireEpochs:
		c = &ExpireEpochs{Through: d.Uvarint("through")}
	case kindPutProcesses:
		c = decodePutProcesses(d)
	case kindAck:
		a := &AckEpoch{Host: d.String("host", wire.MaxHostLen), Epoch: d.Uvarint("epoch")}
		n := d.Count("last seqs", storage.MaxCPUs+1, 1)
		if n > 0 {
			a.LastSeq = make([]uint64, n)
		}
		for i := 0; i < n && d.Err() == nil; i++ {
			a.LastSeq[i] = d.Uvarint("last seq")
		}
		a.At = d.Time("at")
		c = a
	case kindSeal:
		c = &SealEpoch{Epoch: d.Uvarint("epoch"), At: d.Time("at")}
	case kindStart:
		c = &StartEpochs{At: d.Time("at")}
	case kindUploadPaths:
		b := d.LenBytes("path upload", wire.MaxMessageBytes)
		u := &wire.PathUpload{}
		if d.Err() == nil {
			if err := u.UnmarshalBinary(b); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
			}
		}
		c = &UploadPaths{Upload: u}
	case kindIngestValues:
		iv := &IngestValues{First: d.Uvarint("first"), Record: &wire.ValuesRecord{}}
		b := d.LenBytes("values record", wire.MaxMessageBytes)
		if d.Err() == nil {
			if err := iv.Record.UnmarshalBinary(b); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
			}
		}
		c = iv
	default:
		if d.Err() == nil {
			return nil, fmt.Errorf("%w: unknown kind %d", ErrBadCommand, k)
		}
	}
	d.End()
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: malformed command: %w", ErrBadCommand, err)
	}
	if _, ok := c.(*Ingest); ok {
		// decodeIngest checked everything Check would: the caps as it
		// counted, each batch and image record in UnmarshalBinary
		// (which validates), and each delta's Last. Validating every
		// entry a second time was a tenth of a replica's apply.
		return c, nil
	}
	if err := Check(c); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeIngest decodes an Ingest's body; with folds, kindIngestFolds'.
func decodeIngest(d *bincodec.Decoder, folds bool) *Ingest {
	c := &Ingest{}
	n := d.Count("deltas", maxDeltas, 2)
	if n > 0 {
		c.Deltas = make([]storage.Delta, 0, n)
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		last := d.Uvarint("delta last")
		p := d.LenBytes("delta batch", wire.MaxMessageBytes)
		if d.Err() != nil {
			break
		}
		b := new(wire.Batch)
		if err := b.UnmarshalBinary(p); err != nil {
			d.Fail(bincodec.ErrMalformed, "delta %d: %v", i, err)
			break
		}
		delta := storage.Delta{Batch: b, Last: last}
		if folds {
			delta.Folded = decodeFolded(d)
		}
		if d.Err() != nil {
			break
		}
		// The rest of storage.CheckDelta (UnmarshalBinary did Validate).
		if err := storage.CheckDeltaRuns(delta); err != nil {
			d.Fail(bincodec.ErrMalformed, "delta %d: %v", i, err)
			break
		}
		c.Deltas = append(c.Deltas, delta)
	}
	if folds && d.Err() == nil && !hasFolds(c.Deltas) {
		// kindIngest encodes it: one encoding per command.
		d.Fail(bincodec.ErrMalformed, "ingest with folds: no delta is a host fold")
	}
	n = d.Count("images", maxImages, 1)
	for i := 0; i < n && d.Err() == nil; i++ {
		p := d.LenBytes("image", wire.MaxMessageBytes)
		if d.Err() != nil {
			break
		}
		r := new(wire.ImageRecord)
		if err := r.UnmarshalBinary(p); err != nil {
			d.Fail(bincodec.ErrMalformed, "image %d: %v", i, err)
			break
		}
		c.Images = append(c.Images, r)
	}
	return c
}

// decodeFolded decodes a delta's folded runs (kindIngestFolds); nil for
// none. storage.CheckDeltaRuns judges them.
func decodeFolded(d *bincodec.Decoder) []storage.StreamRun {
	n := d.Count("folded runs", storage.MaxFolded, 5)
	if n == 0 {
		return nil
	}
	runs := make([]storage.StreamRun, 0, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		runs = append(runs, storage.StreamRun{CPU: uint16(d.UvarintMax("folded cpu", wire.AllCPUs)),
			First: d.Uvarint("folded first"), Last: d.Uvarint("folded last"),
			Delivered: d.Uvarint("folded delivered"), Accounted: d.Uvarint("folded accounted")})
	}
	return runs
}

// Check applies the rules a command must meet before the FSM applies it;
// the error wraps ErrBadCommand.
func Check(c Command) error {
	var err error
	switch c := c.(type) {
	case *Ingest:
		if len(c.Deltas) > maxDeltas || len(c.Images) > maxImages {
			err = fmt.Errorf("%d deltas and %d images (caps %d, %d)", len(c.Deltas), len(c.Images), maxDeltas, maxImages)
			break
		}
		for i, d := range c.Deltas {
			if e := storage.CheckDelta(d); e != nil {
				err = fmt.Errorf("delta %d: %w", i, e)
				break
			}
		}
		for i, r := range c.Images {
			if r == nil {
				err = fmt.Errorf("image %d: nil", i)
				break
			}
			if e := r.Validate(); e != nil {
				err = fmt.Errorf("image %d: %w", i, e)
				break
			}
		}
	case *RegisterNode:
		err = storage.CheckNode(&storage.Node{Host: c.Host, Labels: c.Labels, CPUs: c.CPUs, Periods: c.Periods, Registered: c.At, Updated: c.At})
		if err == nil && c.At.IsZero() {
			err = errors.New("register: no time")
		}
	case *CutEpoch:
		err = checkAt("cut", c.At)
	case *ScheduledCut:
		err = checkAt("scheduled cut", c.At)
		if err == nil && c.Epoch == 0 {
			err = errors.New("scheduled cut: epoch 0")
		}
	case *MergeEpochs:
		if c.First == 0 || c.Last <= c.First {
			err = fmt.Errorf("merge epochs %d..%d: want 0 < first < last", c.First, c.Last)
		}
	case *ExpireEpochs:
		if c.Through == 0 {
			err = errors.New("expire epochs: through epoch 0")
		}
	case *PutProcesses:
		err = checkProcesses(c)
	case *AckEpoch:
		err = storage.CheckEpochAck(&storage.EpochAck{Host: c.Host, Epoch: c.Epoch, LastSeq: c.LastSeq, At: c.At})
		if err == nil && c.Epoch == 0 {
			err = errors.New("ack: epoch 0")
		}
		if err == nil {
			err = checkAt("ack", c.At)
		}
	case *SealEpoch:
		err = checkAt("seal", c.At)
		if err == nil && c.Epoch == 0 {
			err = errors.New("seal: epoch 0")
		}
	case *StartEpochs:
		err = checkAt("start epochs", c.At)
	case *UploadPaths:
		if c.Upload == nil {
			err = errors.New("upload paths: nil upload")
		} else {
			err = c.Upload.Validate()
		}
	case *IngestValues:
		switch {
		case c.Record == nil:
			err = errors.New("ingest values: nil record")
		case c.First == 0 || c.First > c.Record.Seq:
			err = fmt.Errorf("ingest values: run %d..%d", c.First, c.Record.Seq)
		default:
			err = c.Record.Validate()
		}
	case nil:
		err = errors.New("nil command")
	default:
		err = fmt.Errorf("unknown command %T", c)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	return nil
}

// checkProcesses: a valid host, at least one record and at most
// MaxProcesses, each valid.
func checkProcesses(c *PutProcesses) error {
	if err := wire.CheckHost(c.Host); err != nil {
		return fmt.Errorf("put processes: %w", err)
	}
	if len(c.Records) == 0 || len(c.Records) > MaxProcesses {
		return fmt.Errorf("put processes: %d records (want 1 to %d)", len(c.Records), MaxProcesses)
	}
	for i, r := range c.Records {
		if r == nil {
			return fmt.Errorf("put processes: record %d: nil", i)
		}
		if err := r.Validate(); err != nil {
			return fmt.Errorf("put processes: record %d: %w", i, err)
		}
	}
	return nil
}

// checkAt: a command's time is set and storable (Unix ns, 1678..2262).
func checkAt(what string, t time.Time) error {
	if t.IsZero() {
		return fmt.Errorf("%s: no time", what)
	}
	if !time.Unix(0, t.UnixNano()).Equal(t) {
		return fmt.Errorf("%s: time %v not storable", what, t)
	}
	return nil
}

// ingestChunk is an encoded Ingest carrying deltas [from, to) of a larger
// proposal.
type ingestChunk struct {
	data     []byte
	from, to int
}

// encodeIngestChunks encodes deltas and images as Ingest commands of at most
// max bytes each, keeping the deltas' order (consecutive deltas of a stream
// must apply in order). Each delta and image is marshalled once.
func encodeIngestChunks(deltas []storage.Delta, images []*wire.ImageRecord, max int) ([]ingestChunk, error) {
	type part struct {
		last   uint64
		b      []byte
		folded []storage.StreamRun
		image  bool
	}
	parts := make([]part, 0, len(deltas)+len(images))
	for i, d := range deltas {
		if err := storage.CheckDelta(d); err != nil {
			return nil, fmt.Errorf("%w: delta %d: %w", ErrBadCommand, i, err)
		}
		b, err := d.Batch.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("%w: delta %d: %w", ErrBadCommand, i, err)
		}
		parts = append(parts, part{last: d.Last, b: b, folded: d.Folded})
	}
	for i, r := range images {
		if r == nil {
			return nil, fmt.Errorf("%w: image %d: nil", ErrBadCommand, i)
		}
		b, err := r.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("%w: image %d: %w", ErrBadCommand, i, err)
		}
		parts = append(parts, part{b: b, image: true})
	}
	const overhead = 2 + 2*10 // version, kind, two counts
	var out []ingestChunk
	emit := func(ps []part, from int) {
		nd, folds := 0, false
		for _, p := range ps {
			if !p.image {
				nd++
				folds = folds || len(p.folded) > 0
			}
		}
		kind := byte(kindIngest) // readable by builds from before folds
		if folds {
			kind = kindIngestFolds
		}
		e := &bincodec.Encoder{B: []byte{commandVersion, kind}}
		e.Uvarint(uint64(nd))
		for _, p := range ps[:nd] {
			e.Uvarint(p.last)
			e.Bytes(p.b)
			if folds {
				encodeFolded(e, p.folded)
			}
		}
		e.Uvarint(uint64(len(ps) - nd))
		for _, p := range ps[nd:] {
			e.Bytes(p.b)
		}
		out = append(out, ingestChunk{data: e.B, from: from, to: from + nd})
	}
	start, size, nd := 0, overhead, 0
	for i, p := range parts {
		psize := len(p.b) + 2*10 + (1+5*len(p.folded))*10
		if psize+overhead > max {
			what := fmt.Sprintf("delta %d", i)
			if p.image {
				what = fmt.Sprintf("image %d", i-len(deltas))
			}
			return nil, fmt.Errorf("%w: %s encodes to %d bytes, over the %d a request can carry", ErrBadCommand, what, len(p.b), max-overhead)
		}
		if size+psize > max || i-start >= maxImages { // under both count caps
			emit(parts[start:i], nd)
			for _, q := range parts[start:i] {
				if !q.image {
					nd++
				}
			}
			start, size = i, overhead
		}
		size += psize
	}
	if start < len(parts) || len(out) == 0 {
		emit(parts[start:], nd)
	}
	return out, nil
}
