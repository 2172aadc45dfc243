package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/internal/httpauth"
	"dcpi/internal/progress"
	"dcpi/internal/telemetry"
)

// Telemetry is a process's metrics registry and readiness, and the
// endpoint that serves them when it has an address.
type Telemetry struct {
	Registry *prometheus.Registry
	Ready    *telemetry.Readiness
	srv      *telemetry.Server // nil: not served
}

// StartTelemetry serves the process's endpoint at addr ("": none; the
// registry and readiness still collect, unserved). Beyond loopback its
// /metrics needs the bearer token of httpauth.EnvTokenFile's file, and
// without one it is refused (httpauth.Policy).
func StartTelemetry(addr string) (*Telemetry, error) {
	t := &Telemetry{Registry: telemetry.NewRegistry(), Ready: &telemetry.Readiness{}}
	if addr == "" {
		return t, nil
	}
	token, _, err := httpauth.Policy(addr, "", false)
	if err != nil {
		return nil, fmt.Errorf("metrics endpoint: %w", err)
	}
	srv, err := telemetry.Serve(addr, t.Registry, t.Ready, token)
	if err != nil {
		return nil, err
	}
	t.srv = srv
	return t, nil
}

// URL is the endpoint's base URL ("" when not served).
func (t *Telemetry) URL() string {
	if t.srv == nil {
		return ""
	}
	return t.srv.URL()
}

// Register adds collectors, their metrics labelled with labels (which
// tell apart the instances of a role sharing the process: host, replica,
// aggregator).
func (t *Telemetry) Register(labels prometheus.Labels, cs ...prometheus.Collector) error {
	r := prometheus.WrapRegistererWith(labels, t.Registry)
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// Close stops serving the endpoint.
func (t *Telemetry) Close() {
	if t.srv != nil {
		t.srv.Close()
	}
}

// NATSReady is a readiness check: the connection is up.
func NATSReady(nc *nats.Conn) func() error {
	return func() error {
		if !nc.IsConnected() {
			return fmt.Errorf("not connected to NATS (%s)", nc.Status())
		}
		return nil
	}
}

// StartedCheck is a readiness condition that fails, saying What, until
// its role says it has started (a consumer created, a host running).
type StartedCheck struct {
	What    string
	started atomic.Bool
}

// Started marks the role started.
func (s *StartedCheck) Started() { s.started.Store(true) }

// Check is the readiness condition.
func (s *StartedCheck) Check() error {
	if !s.started.Load() {
		return errors.New(s.What)
	}
	return nil
}

// WaitReady waits until every readiness condition holds (what /readyz
// reports), saying on a terminal which do not yet; it gives up, naming
// them, after limit.
func WaitReady(ctx context.Context, pr *progress.Progress, ready *telemetry.Readiness, limit time.Duration) error {
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
