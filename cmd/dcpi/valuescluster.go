package main

import (
	"context"
	"dcpi/conservation"
	"dcpi/internal/progress"
	"dcpi/wire/delivery"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/aggregator"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/wire"
)

// startValueRecords runs an aggregator's values forwarder until ctx ends:
// the value record stream (made or updated with replicas) merged and
// committed through the coordinator, beside the batches. The stream and
// its consumer are made at the first fetch and again after a failure, so
// the forwarder waits, logging, for a cluster that is not up yet.
func startValueRecords(ctx context.Context, wg *sync.WaitGroup, js jetstream.JetStream, c *coordinator.Client, replicas int, logf func(string, ...any)) *aggregator.ValuesForwarder {
	f := aggregator.NewValuesForwarder(aggregator.Config{Logf: logf}, &lazyValuesSource{js: js, replicas: replicas}, c)
	wg.Add(1)
	go func() { defer wg.Done(); f.Run(ctx) }()
	return f
}

// lazyValuesSource is transport.ValuesSource made on first use.
type lazyValuesSource struct {
	js       jetstream.JetStream
	replicas int
	src      *transport.ValuesSource
}

func (l *lazyValuesSource) FetchValues(ctx context.Context, max int, wait time.Duration) ([]delivery.Values, error) {
	if l.src == nil {
		if err := transport.EnsureValuesStream(ctx, l.js, l.replicas); err != nil {
			return nil, err
		}
		src, err := transport.NewValuesSource(ctx, l.js, 0)
		if err != nil {
			return nil, err
		}
		l.src = src
	}
	ds, err := l.src.FetchValues(ctx, max, wait)
	if err != nil && ctx.Err() == nil {
		l.src = nil // made again next time: the stream may have been lost with its server
	}
	return ds, err
}

// clusterValues reads value sampling's hot lists and accounting from the
// cluster's query service (analysis/values.Source), as dcpi values --nats
// does.
type clusterValues struct {
	ctx          context.Context
	c            *coordinator.Client
	linearizable bool
}

func (v clusterValues) ValueLists(q storage.ValueQuery) ([]wire.ValueList, error) {
	return v.c.ValueLists(v.ctx, storage.Query{Epochs: q.Epochs, Hosts: q.Hosts}, v.linearizable)
}

func (v clusterValues) ValueTotals(q storage.ValueQuery) ([]string, wire.ValueStats, error) {
	return v.c.ValueTotals(v.ctx, storage.Query{Epochs: q.Epochs, Hosts: q.Hosts}, v.linearizable)
}

// valueBaselines is what the cluster held of each host's value accounting
// before this run (a continued fleet), so the demo balances what it added.
func valueBaselines(ctx context.Context, coord *coordinator.Client, hosts []string) (map[string]wire.ValueStats, error) {
	out := map[string]wire.ValueStats{}
	for _, h := range hosts {
		_, s, err := coord.ValueTotals(ctx, storage.Query{Hosts: []string{h}}, true)
		if err != nil {
			return nil, err
		}
		out[h] = s
	}
	return out, nil
}

// waitValuesStored waits until the cluster has stored the value
// accounting of every interrupt the hosts' hardware delivered (beyond
// base), or nothing new for stall, saying so on a terminal.
func waitValuesStored(ctx context.Context, coord *coordinator.Client, pr *progress.Progress, hosts []*clusterHost, base map[string]wire.ValueStats, stall time.Duration) error {
	var want, before uint64
	for _, h := range hosts {
		want += h.interrupts()
		before += base[h.name].Interrupts
	}
	last, lastChange := uint64(0), time.Now()
	for {
		_, s, err := coord.ValueTotals(ctx, storage.Query{}, true)
		if err != nil {
			return err
		}
		got := s.Interrupts - min(before, s.Interrupts)
		if got >= want {
			return nil
		}
		if got != last {
			last, lastChange = got, time.Now()
		} else if time.Since(lastChange) > stall {
			return nil // the conservation lines say what is missing
		}
		pr.Printf("waiting for value records: %d of the %d interrupts the hosts delivered are accounted for in storage", got, want)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// printClusterValueConservation prints the interpreter's conservation of
// interrupts from what the cluster stored, per host and for the fleet,
// each against the interrupts that host's simulated hardware delivered
// (less what a continued fleet held before, base); balanced says every
// line balances exactly.
func printClusterValueConservation(ctx context.Context, w io.Writer, coord *coordinator.Client, module string, hosts []*clusterHost, base map[string]wire.ValueStats) (balanced bool, err error) {
	fmt.Fprintf(w, "value sampling (%s), as the cluster stored it:\n", module)
	var fleet wire.ValueStats
	var delivered uint64
	balanced = true
	for _, h := range hosts {
		_, s, err := coord.ValueTotals(ctx, storage.Query{Hosts: []string{h.name}}, true)
		if err != nil {
			return false, err
		}
		s = conservation.SubtractValues(s, base[h.name])
		n := h.interrupts()
		line, ok := conservation.HostValuesLine(s, n)
		fmt.Fprintf(w, "  %-8s %s\n", h.name, line)
		balanced = balanced && ok
		fleet.Add(s)
		delivered += n
	}
	line, ok := conservation.HostValuesLine(fleet, delivered)
	fmt.Fprintf(w, "  %-8s %s\n", "fleet", line)
	return balanced && ok, nil
}
