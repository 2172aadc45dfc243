package coordinator

import (
	"fmt"

	"dcpi/storage"
)

// SealInput is what the sealing rule reads about one epoch.
type SealInput struct {
	Epoch storage.Epoch
	Nodes []storage.Node
	Acks  []storage.EpochAck // the epoch's
	// Live reports whether a host's heartbeat was seen within the timeout
	// (the leader's soft state, not replicated).
	Live func(host string) bool
	// Applied is the highest contiguous Seq applied for a stream.
	Applied func(host string, cpu uint16) uint64
}

// Sealable is the sealing rule (after DCPI sec. 4.3.3's disjoint
// epochs): a closing epoch is sealed when every live node has acknowledged
// it and, for every stream the ack names, the database has applied every
// batch up to the ack's LastSeq — so no sample of the epoch is still on its
// way. Dead nodes are not waited for (a dead node's late batches still land
// in the epoch, and its ack is recorded as late); nor are nodes that
// registered after the cut, which never sampled in the epoch. waiting says
// what a closing epoch waits for, one item per node or stream.
func Sealable(in SealInput) (ok bool, waiting []string) {
	if in.Epoch.State != storage.EpochClosing {
		return false, nil
	}
	acks := make(map[string]*storage.EpochAck, len(in.Acks))
	for i := range in.Acks {
		acks[in.Acks[i].Host] = &in.Acks[i]
	}
	for _, n := range in.Nodes {
		if !in.Live(n.Host) {
			continue
		}
		if !n.Registered.IsZero() && !in.Epoch.End.IsZero() && n.Registered.After(in.Epoch.End) {
			continue
		}
		a := acks[n.Host]
		if a == nil {
			waiting = append(waiting, fmt.Sprintf("%s: no ack", n.Host))
			continue
		}
		for i, seq := range a.LastSeq {
			cpu := storage.StreamCPU(i, n.CPUs)
			if have := in.Applied(n.Host, cpu); have < seq {
				waiting = append(waiting, fmt.Sprintf("%s cpu %d: applied seq %d of %d", n.Host, cpu, have, seq))
			}
		}
	}
	return len(waiting) == 0, waiting
}

// sealView evaluates the sealing rule for every closing epoch of db.
func sealView(db *storage.DB, live func(string) bool) (due []uint64, waiting map[uint64][]string, err error) {
	eps, err := db.Epochs()
	if err != nil {
		return nil, nil, err
	}
	var nodes []storage.Node
	waiting = map[uint64][]string{}
	var aerr error
	applied := func(host string, cpu uint16) uint64 {
		s, err := db.Applied(host, cpu)
		if err != nil && aerr == nil {
			aerr = err
		}
		return s
	}
	for _, e := range eps {
		if e.State != storage.EpochClosing {
			continue
		}
		if nodes == nil {
			if nodes, err = db.Nodes(); err != nil {
				return nil, nil, err
			}
		}
		acks, err := db.EpochAcks(e.Number)
		if err != nil {
			return nil, nil, err
		}
		ok, w := Sealable(SealInput{Epoch: e, Nodes: nodes, Acks: acks, Live: live, Applied: applied})
		if aerr != nil {
			return nil, nil, aerr
		}
		if ok {
			due = append(due, e.Number)
		} else {
			waiting[e.Number] = w
		}
	}
	return due, waiting, nil
}

// DueSeals lists the closing epochs the sealing rule says to seal now, given
// the leader's view of liveness.
func (f *FSM) DueSeals(live func(host string) bool) ([]uint64, error) {
	var due []uint64
	err := f.View(func(db *storage.DB) error {
		var err error
		due, _, err = sealView(db, live)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("coordinator: sealing rule: %w", err)
	}
	return due, nil
}
