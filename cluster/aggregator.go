package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/aggregator"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
	"dcpi/wire/delivery"
)

// AggregatorConfig is one aggregator role.
type AggregatorConfig struct {
	// Aggregator is the batch aggregator's configuration (its Logger is
	// set from Logger).
	Aggregator aggregator.Config
	// StreamReplicas is the JetStream replication of the value-record
	// stream, made when missing.
	StreamReplicas int
	// StatsEvery logs the aggregator's counters this often (0: never).
	StatsEvery time.Duration
	Logger     *slog.Logger
}

// Aggregator is a running aggregator role: the batch aggregator on the
// shared durable consumer, the path-upload consumer and the value-record
// forwarder, each committing through the coordinator.
type Aggregator struct {
	agg    *aggregator.Aggregator
	values *aggregator.ValuesForwarder
	done   chan error
	wg     sync.WaitGroup
}

// StartAggregator waits for NATS and for the batch stream (its
// coordinator may start after the aggregator), then runs the role until
// ctx ends. nc carries the aggregator role's credentials.
func StartAggregator(ctx context.Context, nc *nats.Conn, c AggregatorConfig) (*Aggregator, error) {
	lf := logf(c.Logger)
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	cons, err := newConsumerRetrying(ctx, nc, js, lf)
	if err != nil {
		return nil, err
	}
	src := transport.BatchSource{Consumer: cons, JS: js}
	ac := c.Aggregator
	ac.Logger = c.Logger
	a := &Aggregator{
		agg:    aggregator.New(ac, src, coordinator.NewClient(nc), src),
		values: aggregator.NewValuesForwarder(aggregator.Config{Logger: c.Logger}, &lazyValuesSource{js: js, replicas: c.StreamReplicas}, coordinator.NewClient(nc)),
		done:   make(chan error, 1),
	}
	a.wg.Add(2)
	go func() { defer a.wg.Done(); RunPathUploads(ctx, js, coordinator.NewClient(nc), c.Logger) }()
	go func() { defer a.wg.Done(); a.values.Run(ctx) }()
	if c.StatsEvery > 0 {
		a.wg.Add(1)
		go func() { defer a.wg.Done(); a.logStats(ctx, c.StatsEvery, lf) }()
	}
	go func() { a.done <- a.agg.Run(ctx) }()
	return a, nil
}

// Wait waits for the role to stop (its context ended) and returns why the
// batch aggregator stopped.
func (a *Aggregator) Wait() error {
	err := <-a.done
	a.wg.Wait()
	return err
}

// Stats are the batch aggregator's counters.
func (a *Aggregator) Stats() aggregator.Stats { return a.agg.Stats() }

// ValuesStats are the value-record forwarder's counters.
func (a *Aggregator) ValuesStats() aggregator.ValuesStats { return a.values.Stats() }

// Collector is the batch aggregator's metrics.
func (a *Aggregator) Collector() prometheus.Collector { return a.agg.Collector() }

func (a *Aggregator) logStats(ctx context.Context, every time.Duration, lf func(string, ...any)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s := a.agg.Stats()
			lf("%d batches acked, %d entries in, %d out, %d proposals, %d rejected, %d gaps, %d overlaps; %v", s.Acked, s.EntriesIn, s.EntriesOut, s.Proposals, s.Rejected, s.Gaps, s.Overlaps, a.values.Stats())
		}
	}
}

// newConsumerRetrying waits for NATS and for the stream (its coordinator
// may start after the aggregator), with backoff and a line per attempt.
func newConsumerRetrying(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, lf func(string, ...any)) (*transport.Consumer, error) {
	if err := transport.WaitConnected(ctx, transport.DefaultBackoff, nc, lf); err != nil {
		return nil, err
	}
	var c *transport.Consumer
	err := transport.Retry(ctx, transport.DefaultBackoff, "the stream "+transport.StreamName+" (a coordinator creates it)", lf,
		func(ctx context.Context) error {
			var err error
			c, err = transport.NewConsumer(ctx, js, transport.ConsumerConfig{})
			return err
		})
	return c, err
}

// RunPathUploads commits the hosts' path-profile uploads through the
// coordinator until ctx ends (dcpi pp upload; docs/paths.md).
func RunPathUploads(ctx context.Context, js jetstream.JetStream, c *coordinator.Client, logger *slog.Logger) {
	lf := logf(logger)
	err := transport.Retry(ctx, transport.DefaultBackoff, "the stream "+transport.PathStreamName, lf, func(ctx context.Context) error {
		return transport.EnsurePathStream(ctx, js, 0)
	})
	if err != nil {
		return
	}
	transport.ConsumePathUploads(ctx, js, transport.PathConsumerConfig{Logger: logger}, func(ctx context.Context, u *wire.PathUpload) error {
		out, err := c.UploadPaths(ctx, u)
		if err != nil {
			if errors.Is(err, coordinator.ErrBadRequest) {
				lf("path upload %s/%s refused: %v", u.Host, u.ID, err)
				return nil // never applicable: do not redeliver
			}
			return err
		}
		if out.Status == storage.PathRefused {
			lf("path upload %s/%s of %s refused: %s", u.Host, u.ID, u.Image, out.Reason)
		}
		return nil
	})
}

// lazyValuesSource is transport.ValuesSource made on first use, and again
// after a failure: the stream may have been lost with its server, and an
// aggregator may start before the cluster is up.
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
		l.src = nil
	}
	return ds, err
}

// PathUploadPublisher returns how a tool sends a path upload to the
// cluster (dcpi pp upload): published on the path upload stream, which it
// creates if need be, for the aggregators to hand to the coordinator,
// which applies each upload ID once.
func PathUploadPublisher(ctx context.Context, nc *nats.Conn) (func(*wire.PathUpload) (string, error), error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := transport.EnsurePathStream(ectx, js, 0); err != nil {
		return nil, err
	}
	return func(u *wire.PathUpload) (string, error) {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := transport.PublishPathUpload(pctx, js, u); err != nil {
			return "", err
		}
		return "published (the coordinator applies it once)", nil
	}, nil
}

// RunAggregatorRole is dcpi aggregator: the role configured by cfg's
// aggregator and NATS sections, connected with the aggregator role's
// credentials, ready on tel once it consumes the batch stream, until ctx
// ends.
func RunAggregatorRole(ctx context.Context, cfg config.Config, tel *Telemetry, log *slog.Logger) error {
	nc, err := ConnectRole(ctx, cfg.NATS, auth.Aggregator, "", "aggregator", log)
	if err != nil {
		return err
	}
	defer nc.Close()
	consuming := &StartedCheck{What: "waiting for the stream " + transport.StreamName}
	tel.Ready.Add("nats", NATSReady(nc))
	tel.Ready.Add("aggregator", consuming.Check)
	ac := cfg.Aggregator
	a, err := StartAggregator(ctx, nc, AggregatorConfig{
		Aggregator: aggregator.Config{FetchMax: ac.FetchMax, FetchWait: ac.FetchWait, InFlight: ac.InFlight, MaxPendingEntries: ac.MaxPendingEntries,
			Limits: aggregator.Limits{MaxProposalEntries: ac.MaxProposalEntries, MaxDeltaEntries: ac.MaxProposalEntries / 2, FoldHosts: ac.FoldHosts}},
		StreamReplicas: cfg.NATS.StreamReplicas, StatsEvery: 10 * time.Second, Logger: log})
	if err != nil {
		return err
	}
	if err := tel.Register(nil, a.Collector()); err != nil {
		return err
	}
	consuming.Started()
	logf(log)("consuming %s", transport.StreamName)
	return a.Wait()
}
