package aggregator

import (
	"context"
	"dcpi/wire/delivery"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"dcpi/wire"
)

// MemSource is Source in memory with JetStream's work-queue semantics, as
// hashicorp/raft's InmemTransport is for its transport: a message stays in
// the stream until acknowledged or terminated, a fetch returns any of the
// live ones (in an order its Rand shuffles, when set, as redelivery and
// several consumers reorder them), a Nak or an unsettled fetch leaves a
// message to come back. It is safe for concurrent use.
type MemSource struct {
	// Rand, when set, shuffles each fetch and, with LoseAckOneIn > 0,
	// loses one acknowledgement in LoseAckOneIn after the commit (the
	// message then comes back, as after an ack that never reached the
	// server).
	Rand         *rand.Rand
	LoseAckOneIn int
	// Exclusive keeps a fetched message from other fetches until it is
	// handed back (Nak) or its acknowledgement is lost, as JetStream's
	// AckWait does for a consumer's concurrent pulls; without it every
	// fetch sees every unsettled message, as redelivery races do.
	Exclusive bool

	mu            sync.Mutex
	msgs          []*memDelivery
	acked, termed int
}

// Add puts b in the stream.
func (s *MemSource) Add(b *wire.Batch) { s.add(&memDelivery{s: s, b: b}) }

// AddInvalid puts a message in the stream that fails to decode with err.
func (s *MemSource) AddInvalid(err error) { s.add(&memDelivery{s: s, err: err}) }

func (s *MemSource) add(d *memDelivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, d)
}

// Fetch returns up to max live messages.
func (s *MemSource) Fetch(_ context.Context, max int, _ time.Duration) ([]delivery.Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var live []delivery.Batch
	for _, m := range s.msgs {
		if !m.gone && !m.pending {
			live = append(live, m)
		}
	}
	if s.Rand != nil {
		s.Rand.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	}
	live = live[:min(max, len(live))]
	if s.Exclusive {
		for _, m := range live {
			m.(*memDelivery).pending = true
		}
	}
	return live, nil
}

// Empty reports whether every message has been acknowledged or terminated.
func (s *MemSource) Empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		if !m.gone {
			return false
		}
	}
	return true
}

// Settled returns how many messages were acknowledged and terminated.
func (s *MemSource) Settled() (acked, terminated int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked, s.termed
}

// errAckLost is what a lost acknowledgement returns.
var errAckLost = errors.New("aggregator: MemSource lost the ack")

type memDelivery struct {
	s       *MemSource
	b       *wire.Batch
	err     error
	gone    bool
	pending bool // fetched by an Exclusive source and not handed back
}

func (d *memDelivery) Batch() *wire.Batch { return d.b }
func (d *memDelivery) Err() error         { return d.err }

func (d *memDelivery) Ack(context.Context) error {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Rand != nil && s.LoseAckOneIn > 0 && s.Rand.IntN(s.LoseAckOneIn) == 0 {
		d.pending = false // its AckWait runs out: delivered again
		return errAckLost
	}
	if !d.gone {
		d.gone = true
		s.acked++
	}
	return nil
}

func (d *memDelivery) Nak(time.Duration) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	d.pending = false
	return nil
}

func (d *memDelivery) Term(string) error {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !d.gone {
		d.gone = true
		s.termed++
	}
	return nil
}
