package main

import (
	"context"
	"dcpi/internal/progress"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dcpi/internal/telemetry"
)

// addMetricsFlag adds --metrics to a server role.
func addMetricsFlag(f *pflag.FlagSet, def string) {
	f.String("metrics", def, "serve Prometheus metrics (/metrics), /healthz and /readyz at this host:port (port 0: any; docs/metrics.md)")
}

// roleTelemetry is a process's metrics registry and readiness, and the
// endpoint that serves them when --metrics is given.
type roleTelemetry struct {
	reg   *prometheus.Registry
	ready *telemetry.Readiness
	srv   *telemetry.Server // nil: no --metrics
}

// startTelemetry serves the process's endpoint at addr ("": none; the
// registry and readiness still collect, unserved).
func startTelemetry(addr string) (*roleTelemetry, error) {
	t := &roleTelemetry{reg: telemetry.NewRegistry(), ready: &telemetry.Readiness{}}
	if addr == "" {
		return t, nil
	}
	srv, err := telemetry.Serve(addr, t.reg, t.ready)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	t.srv = srv
	return t, nil
}

// startRoleTelemetry starts the endpoint a role's --metrics flag asks for
// and, when one is served and logf is not nil, logs where.
func startRoleTelemetry(cmd *cobra.Command, logf func(string, ...any)) (*roleTelemetry, error) {
	addr, _ := cmd.Flags().GetString("metrics")
	t, err := startTelemetry(addr)
	if err != nil {
		return nil, err
	}
	if u := t.url(); u != "" && logf != nil {
		logf("metrics at %s/metrics, readiness at %s/readyz", u, u)
	}
	return t, nil
}

// url is the endpoint's base URL ("" without --metrics).
func (t *roleTelemetry) url() string {
	if t.srv == nil {
		return ""
	}
	return t.srv.URL()
}

// register adds collectors, their metrics labelled with labels (which
// tell apart the instances of a role sharing the process: host, replica,
// aggregator).
func (t *roleTelemetry) register(labels prometheus.Labels, cs ...prometheus.Collector) error {
	r := prometheus.WrapRegistererWith(labels, t.reg)
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

func (t *roleTelemetry) close() {
	if t.srv != nil {
		t.srv.Close()
	}
}

// natsReady is a readiness check: the connection is up.
func natsReady(nc *nats.Conn) func() error {
	return func() error {
		if !nc.IsConnected() {
			return fmt.Errorf("not connected to NATS (%s)", nc.Status())
		}
		return nil
	}
}

// startedCheck is a readiness condition that fails until its role says it
// has started (a consumer created, a host running).
type startedCheck struct {
	what    string
	started atomic.Bool
}

func (s *startedCheck) check() error {
	if !s.started.Load() {
		return errors.New(s.what)
	}
	return nil
}

// waitReady waits until every readiness condition of the fleet holds (what
// /readyz reports), saying on a terminal which do not yet; it gives up,
// naming them, after limit.
func waitReady(ctx context.Context, pr *progress.Progress, ready *telemetry.Readiness, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		unmet := ready.Check()
		if len(unmet) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster was not ready after %v: %s", limit, strings.Join(unmet, "; "))
		}
		pr.Printf("waiting for the cluster to be ready: %s", strings.Join(unmet, "; "))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
