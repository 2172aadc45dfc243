package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Backoff is the pause between attempts to join the cluster: it starts at
// Min and doubles up to Max. Roles started together (three coordinators,
// the first of which embeds the NATS server the others use) each find the
// others missing for a few seconds; retrying quickly at first and then
// every few seconds brings them up without flooding the log.
type Backoff struct {
	Min, Max time.Duration
}

// DefaultBackoff is the roles' backoff: 100 ms, doubling to 5 s.
var DefaultBackoff = Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}

// next is the pause after one of d.
func (b Backoff) next(d time.Duration) time.Duration {
	if d <= 0 {
		return max(b.Min, time.Millisecond)
	}
	return min(2*d, max(b.Max, b.Min))
}

// ErrPermanent marks an error that retrying cannot cure (a bad
// configuration, a stream left by an older version): Retry returns it at
// once. Wrap with fmt.Errorf("...: %w", ErrPermanent) or Permanent.
var ErrPermanent = errors.New("permanent")

// Permanent marks err so that Retry does not retry it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

type permanentError struct{ err error }

func (p permanentError) Error() string   { return p.err.Error() }
func (p permanentError) Unwrap() []error { return []error{p.err, ErrPermanent} }

// Retryable says whether an attempt to join the cluster that failed with
// err may succeed later: everything but a permanent error, a stream of an
// older version, and a JetStream request the server refused as malformed
// (HTTP-like status 400: a configuration it will refuse again).
func Retryable(err error) bool {
	var api *jetstream.APIError
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrPermanent), errors.Is(err, ErrLegacyStream), errors.Is(err, nats.ErrConnectionClosed):
		return false
	case errors.As(err, &api) && api.Code == 400:
		return false
	}
	return true
}

// Retry calls attempt until it succeeds, returns an error Retryable
// refuses, or ctx ends, pausing by b between attempts. Each failure is
// logged as one line, "waiting for WHAT: ERR (retrying in D)", so a role
// that cannot yet join says what it waits for instead of dying or going
// silent. The returned error names what and the last failure.
func Retry(ctx context.Context, b Backoff, what string, logf func(string, ...any), attempt func(context.Context) error) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var pause time.Duration
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil {
			if n > 1 {
				logf("%s: done after %d attempts", what, n)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (last failure: %v)", what, ctx.Err(), err)
		}
		if !Retryable(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		pause = b.next(pause)
		logf("waiting for %s: %v (attempt %d, retrying in %v)", what, err, n, pause)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last failure: %v)", what, ctx.Err(), err)
		case <-time.After(pause):
		}
	}
}

// WaitConnected waits until nc is connected, logging one line per pause
// (with the backoff's growing interval) while it is not. Connect returns a
// connection that keeps trying in the background; a request on it before
// it has connected fails at once with "outbound buffer limit exceeded"
// (Connect disables the reconnect buffer), so a role waits here first.
func WaitConnected(ctx context.Context, b Backoff, nc *nats.Conn, logf func(string, ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if nc.IsConnected() {
		return nil
	}
	urls := strings.Join(nc.Servers(), ",")
	start := time.Now()
	var pause time.Duration
	for !nc.IsConnected() {
		if nc.IsClosed() {
			return fmt.Errorf("NATS connection to %s closed", urls)
		}
		pause = b.next(pause)
		// Poll finely, log at the backoff's pace.
		deadline := time.Now().Add(pause)
		for !nc.IsConnected() && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for a NATS server at %s: %w", urls, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
		if !nc.IsConnected() {
			logf("waiting for a NATS server at %s (%.1fs so far; is it running?)", urls, time.Since(start).Seconds())
		}
	}
	if time.Since(start) > b.Min {
		logf("connected to NATS at %s after %.1fs", nc.ConnectedUrlRedacted(), time.Since(start).Seconds())
	}
	return nil
}

// EnsureStreamRetrying is EnsureStream for a role starting beside others:
// it waits for the connection, then retries with backoff while the server
// or its JetStream is not yet ready, each attempt bounded by attemptTimeout
// (0: 10 s). It gives up only on ctx or a permanent error.
func EnsureStreamRetrying(ctx context.Context, b Backoff, nc *nats.Conn, js jetstream.JetStream, replicas int, attemptTimeout time.Duration, logf func(string, ...any)) error {
	if err := WaitConnected(ctx, b, nc, logf); err != nil {
		return err
	}
	if attemptTimeout <= 0 {
		attemptTimeout = 10 * time.Second
	}
	return Retry(ctx, b, "the JetStream stream "+StreamName, logf, func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		err := EnsureStream(actx, js, replicas)
		if err != nil && (replicas < 0 || replicas > 5) {
			return Permanent(err)
		}
		return err
	})
}
