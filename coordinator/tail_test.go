package coordinator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"dcpi/storage"
)

// fakeTails is a stream holding, per host, the given newest batches and
// value record.
type fakeTails struct {
	batches map[string][]storage.StreamState
	values  map[string]uint64
}

func (f fakeTails) LastBatches(_ context.Context, host string, cpus int) ([]storage.StreamState, error) {
	b, ok := f.batches[host]
	if !ok {
		return make([]storage.StreamState, cpus), nil
	}
	if len(b) != cpus {
		return nil, errors.New("no such CPUs")
	}
	return b, nil
}

func (f fakeTails) LastValues(_ context.Context, host string) (uint64, error) {
	return f.values[host], nil
}

// TestStreamTailQueries: a replica answers a host's stream tails from its
// StreamTails, per CPU in order; a request for no CPUs or too many is a
// bad request; a replica without StreamTails says so rather than answer
// that nothing is waiting (a resuming agent would reuse sequence numbers).
func TestStreamTailQueries(t *testing.T) {
	tails := fakeTails{
		batches: map[string][]storage.StreamState{"h1": {{Seq: 9, Delivered: 100, Accounted: 90}, {}}},
		values:  map[string]uint64{"h1": 4},
	}
	c := newTunedCluster(t, 1, func(cfg *Config) { cfg.Tails = tails })
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := cl.StreamTail(ctx, "h1", 2)
	if err != nil || !slices.Equal(got, tails.batches["h1"]) {
		t.Errorf("h1's tail: %+v %v, want %+v", got, err, tails.batches["h1"])
	}
	if got, err := cl.StreamTail(ctx, "h2", 3); err != nil || !slices.Equal(got, make([]storage.StreamState, 3)) {
		t.Errorf("h2's (empty) tail: %+v %v", got, err)
	}
	if seq, err := cl.ValuesTail(ctx, "h1"); err != nil || seq != 4 {
		t.Errorf("h1's value tail: %d %v, want 4", seq, err)
	}
	for _, cpus := range []int{0, MaxAppliedCPUs + 1} {
		if _, err := cl.StreamTail(ctx, "h1", cpus); !errors.Is(err, ErrBadRequest) {
			t.Errorf("a tail of %d CPUs: %v, want a bad request", cpus, err)
		}
	}

	bare := newCluster(t, 1)
	bc := NewClient(connect(t, bare.url))
	if _, err := bc.StreamTail(ctx, "h1", 1); err == nil || !strings.Contains(err.Error(), "reads no streams") {
		t.Errorf("a replica without StreamTails: %v, want it to say it reads no streams", err)
	}
}
