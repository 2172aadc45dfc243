package coordinator

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"dcpi/storage"
	"dcpi/wire"
)

// The FSM's rules, one pure function per command, in the shape of
// Sealable: each reads the registry as the log has left it and returns the
// command's effect — the records to write and Apply's result — or an error
// wrapping ErrBadCommand when the command breaks a rule. None writes;
// FSM.apply carries the effect out in one storage batch with the entry's
// log index, so a command either changes everything it says or nothing.

// registry is what the rules read: the replicated registry of epochs,
// nodes and acks as of the entries applied so far (*storage.DB).
type registry interface {
	Epochs() ([]storage.Epoch, error)
	Epoch(n uint64) (storage.Epoch, error)
	Node(host string) (storage.Node, error)
	EpochAck(epoch uint64, host string) (storage.EpochAck, error)
}

// effect is what applying one command does.
type effect struct {
	nodes  []storage.Node
	epochs []storage.Epoch
	acks   []storage.EpochAck
	images []*wire.ImageRecord // content-addressed: storing one again is harmless
	// processes are host's process records (PutProcesses); storing one
	// again replaces it with the same record.
	processes     []*wire.ProcessRecord
	processesHost string

	// ingest applies deltas (possibly none) in the batch, and Apply's
	// result is their outcomes, which storage decides against the
	// applied sequence numbers it reads in the same call.
	ingest bool
	deltas []storage.Delta

	// pathUpload, if set, is applied in the batch by
	// storage.ApplyPathUploadWith, whose outcome is Apply's result.
	pathUpload *wire.PathUpload

	// values, if set, is applied in the batch by
	// storage.ApplyValuesWith from valuesFirst, whose outcome is
	// Apply's result.
	values      *wire.ValuesRecord
	valuesFirst uint64

	// compact, if not 0, is an epoch just sealed, to compact in the
	// background once the batch is committed (FSM.compactSoon).
	compact uint64

	// merge, if set, is carried out by storage.MergeEpochs, and expire,
	// if not 0, by storage.ExpireEpochs through it, in the batch; their
	// results are Apply's, and the ranges they removed are compacted in
	// the background.
	merge  *MergeEpochs
	expire uint64

	// result is Apply's result for a command other than Ingest.
	result any
}

// decide returns c's effect on the registry reg.
func decide(reg registry, c Command) (effect, error) {
	switch c := c.(type) {
	case *Ingest:
		return ingestEffect(c), nil
	case *RegisterNode:
		return registerEffect(reg, c)
	case *StartEpochs:
		return startEffect(reg, c)
	case *CutEpoch:
		return cutEffect(reg, c)
	case *ScheduledCut:
		return scheduledCutEffect(reg, c)
	case *AckEpoch:
		return ackEffect(reg, c)
	case *SealEpoch:
		return sealEffect(reg, c)
	case *UploadPaths:
		// Storage decides against the upload IDs it holds, as it
		// decides a delta against the applied sequence numbers.
		return effect{pathUpload: c.Upload}, nil
	case *IngestValues:
		// Storage decides against the host's applied Seq, as for a
		// delta.
		return effect{values: c.Record, valuesFirst: c.First}, nil
	case *MergeEpochs:
		return mergeEffect(reg, c)
	case *ExpireEpochs:
		return expireEffect(reg, c)
	case *PutProcesses:
		// Reads nothing: a process record is stored whatever the
		// epochs, as a late batch lands in its epoch.
		return effect{processes: c.Records, processesHost: c.Host}, nil
	}
	return effect{}, badCommand("unknown command %T", c)
}

func badCommand(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadCommand, fmt.Sprintf(format, args...))
}

// ingestEffect stores the deltas and the image records; it reads nothing
// of the registry (epochs do not gate samples: a late batch still lands in
// its epoch, sealed or not).
func ingestEffect(c *Ingest) effect {
	return effect{ingest: true, deltas: c.Deltas, images: c.Images}
}

// registerEffect adds the host or updates its labels, CPUs and events per
// sample (as the node is configured now: a registration without them, from
// an earlier build, clears them), keeping its first registration time, and
// opens epoch 1 if there is none, so the first node finds an open epoch.
func registerEffect(reg registry, c *RegisterNode) (effect, error) {
	n := storage.Node{Host: c.Host, Labels: c.Labels, CPUs: c.CPUs, Periods: c.Periods, Registered: c.At, Updated: c.At}
	old, err := reg.Node(c.Host)
	switch {
	case err == nil:
		n.Registered = old.Registered
	case !errors.Is(err, storage.ErrNotFound):
		return effect{}, fmt.Errorf("coordinator: register %q: %w", c.Host, err)
	}
	first, err := firstEpoch(reg, c.At)
	if err != nil {
		return effect{}, err
	}
	return effect{nodes: []storage.Node{n}, epochs: first}, nil
}

// startEffect opens epoch 1 if there is none.
func startEffect(reg registry, c *StartEpochs) (effect, error) {
	first, err := firstEpoch(reg, c.At)
	if err != nil {
		return effect{}, err
	}
	return effect{epochs: first}, nil
}

// firstEpoch is epoch 1, open from at, if there is no epoch yet.
func firstEpoch(reg registry, at time.Time) ([]storage.Epoch, error) {
	eps, err := reg.Epochs()
	if err != nil {
		return nil, fmt.Errorf("coordinator: epochs: %w", err)
	}
	if len(eps) > 0 {
		return nil, nil
	}
	return []storage.Epoch{{Number: 1, Start: at, State: storage.EpochOpen}}, nil
}

// cutEffect closes the open epoch (if any) at c.At and opens the next,
// which starts where the closed one ends (DCPI sec. 4.3.3: epochs are
// non-overlapping intervals). The result is the new epoch's number.
func cutEffect(reg registry, c *CutEpoch) (effect, error) {
	eps, err := reg.Epochs()
	if err != nil {
		return effect{}, fmt.Errorf("coordinator: cut: %w", err)
	}
	e := cutEpochs(eps, c.At)
	e.result = e.epochs[len(e.epochs)-1].Number
	return e, nil
}

// scheduledCutEffect cuts as cutEffect does if c.Epoch is the open epoch;
// otherwise that epoch was cut already (by hand, or by this period's
// earlier proposal) and nothing changes: not an error, since a leader
// change or a retry makes it in normal operation. The result is a
// ScheduledCutResult.
func scheduledCutEffect(reg registry, c *ScheduledCut) (effect, error) {
	eps, err := reg.Epochs()
	if err != nil {
		return effect{}, fmt.Errorf("coordinator: scheduled cut: %w", err)
	}
	if cur, ok := openEpoch(eps); !ok || cur.Number != c.Epoch {
		return effect{result: ScheduledCutResult{}}, nil
	}
	e := cutEpochs(eps, c.At)
	e.result = ScheduledCutResult{Opened: e.epochs[len(e.epochs)-1].Number}
	return e, nil
}

// cutEpochs is the cut of eps at at: the open epoch (if any) closing, and
// the next epoch open, last.
func cutEpochs(eps []storage.Epoch, at time.Time) effect {
	next, start := uint64(1), at
	if len(eps) > 0 {
		next = eps[len(eps)-1].Number + 1
	}
	var e effect
	if cur, ok := openEpoch(eps); ok {
		// A new leader's clock may be behind the old one's; an epoch
		// never ends before it starts.
		cur.State, cur.End = storage.EpochClosing, at
		if cur.End.Before(cur.Start) {
			cur.End = cur.Start
		}
		start = cur.End
		e.epochs = append(e.epochs, cur)
	}
	e.epochs = append(e.epochs, storage.Epoch{Number: next, Start: start, State: storage.EpochOpen})
	return e
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

// ackEffect records a registered host's ack of a cut epoch, one LastSeq
// per stream (at most its CPUs and the all-CPUs stream); a later ack
// replaces an earlier one. An ack of a sealed epoch is late (the seal did
// not wait for it) unless it repeats the ack the seal counted, which
// changes nothing. The result is an AckResult.
func ackEffect(reg registry, c *AckEpoch) (effect, error) {
	e, err := reg.Epoch(c.Epoch)
	if errors.Is(err, storage.ErrNotFound) {
		return effect{}, badCommand("ack by %q: no epoch %d", c.Host, c.Epoch)
	} else if err != nil {
		return effect{}, fmt.Errorf("coordinator: ack: %w", err)
	}
	if e.State == storage.EpochOpen {
		return effect{}, badCommand("ack by %q: epoch %d is open (not cut)", c.Host, c.Epoch)
	}
	n, err := reg.Node(c.Host)
	if errors.Is(err, storage.ErrNotFound) {
		return effect{}, badCommand("ack of epoch %d: host %q is not registered", c.Epoch, c.Host)
	} else if err != nil {
		return effect{}, fmt.Errorf("coordinator: ack: %w", err)
	}
	if len(c.LastSeq) > n.CPUs+1 {
		return effect{}, badCommand("ack of epoch %d by %q: %d streams for %d CPUs", c.Epoch, c.Host, len(c.LastSeq), n.CPUs)
	}
	a := storage.EpochAck{Epoch: c.Epoch, Host: c.Host, LastSeq: c.LastSeq, At: c.At, Late: e.State == storage.EpochSealed}
	if a.Late {
		old, err := reg.EpochAck(c.Epoch, c.Host)
		switch {
		case err == nil && slices.Equal(old.LastSeq, c.LastSeq):
			return effect{result: AckResult{Late: old.Late}}, nil
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return effect{}, fmt.Errorf("coordinator: ack: %w", err)
		}
	}
	return effect{acks: []storage.EpochAck{a}, result: AckResult{Late: a.Late}}, nil
}

// sealEffect marks a closing epoch sealed (the leader proposes it when
// Sealable says so) and asks for a compaction; sealing a sealed epoch
// again changes nothing. An open epoch cannot be sealed.
func sealEffect(reg registry, c *SealEpoch) (effect, error) {
	e, err := reg.Epoch(c.Epoch)
	if errors.Is(err, storage.ErrNotFound) {
		return effect{}, badCommand("seal: no epoch %d", c.Epoch)
	} else if err != nil {
		return effect{}, fmt.Errorf("coordinator: seal: %w", err)
	}
	switch e.State {
	case storage.EpochOpen:
		return effect{}, badCommand("seal: epoch %d is open (not cut)", c.Epoch)
	case storage.EpochClosing:
		e.State = storage.EpochSealed
		return effect{epochs: []storage.Epoch{e}, compact: e.Number}, nil
	}
	return effect{}, nil
}

// mergeEffect merges c.First..c.Last if every epoch record in the range
// is sealed, First is among them and another is: the leader proposed it
// from the same replicated records, so a range that no longer qualifies
// was merged or expired already (a retry, a deposed leader) and nothing
// changes — the result is MergeResult{} then, not an error. A range
// holding an epoch that is not sealed is a bad command: the policy never
// proposes one, and merging it would move samples still arriving.
func mergeEffect(reg registry, c *MergeEpochs) (effect, error) {
	eps, err := reg.Epochs()
	if err != nil {
		return effect{}, fmt.Errorf("coordinator: merge epochs: %w", err)
	}
	var parts []storage.Epoch
	for _, e := range eps {
		if e.Number >= c.First && e.Number <= c.Last {
			parts = append(parts, e)
		}
	}
	for _, e := range parts {
		if e.State != storage.EpochSealed {
			return effect{}, badCommand("merge epochs %d..%d: epoch %d is %v, not sealed", c.First, c.Last, e.Number, e.State)
		}
	}
	if len(parts) < 2 || parts[0].Number != c.First {
		return effect{result: MergeResult{}}, nil
	}
	return effect{merge: c}, nil
}

// expireEffect deletes every epoch through c.Through if all of them are
// sealed; with none left (a retry, a deposed leader) nothing changes and
// the result is ExpireResult{}. An epoch through it that is not sealed
// makes it a bad command, as for a merge.
func expireEffect(reg registry, c *ExpireEpochs) (effect, error) {
	eps, err := reg.Epochs()
	if err != nil {
		return effect{}, fmt.Errorf("coordinator: expire epochs: %w", err)
	}
	n := 0
	for _, e := range eps {
		if e.Number > c.Through {
			break
		}
		if e.State != storage.EpochSealed {
			return effect{}, badCommand("expire epochs through %d: epoch %d is %v, not sealed", c.Through, e.Number, e.State)
		}
		n++
	}
	if n == 0 {
		return effect{result: ExpireResult{}}, nil
	}
	return effect{expire: c.Through}, nil
}

var _ registry = (*storage.DB)(nil)
