package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// logLines collects a role's log lines for a test.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func TestBackoffDoublesToItsMax(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	var got []time.Duration
	var d time.Duration
	for range 6 {
		d = b.next(d)
		got = append(got, d)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pauses %v, want %v", got, want)
	}
}

func TestRetryStopsOnPermanentErrors(t *testing.T) {
	for _, err := range []error{Permanent(errors.New("bad")), fmt.Errorf("x: %w", ErrLegacyStream),
		&jetstream.APIError{Code: 400, Description: "bad config"}} {
		calls := 0
		got := Retry(context.Background(), Backoff{Min: time.Millisecond, Max: time.Millisecond}, "thing", nil,
			func(context.Context) error { calls++; return err })
		if calls != 1 || got == nil || !strings.Contains(got.Error(), "thing") {
			t.Errorf("%v: %d calls, err %v; want 1 call and an error naming what it waited for", err, calls, got)
		}
	}
	calls := 0
	var l logLines
	err := Retry(context.Background(), Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond}, "thing", l.logf,
		func(context.Context) error {
			if calls++; calls < 4 {
				return nats.ErrNoResponders
			}
			return nil
		})
	if err != nil || calls != 4 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
	if n := strings.Count(l.String(), "waiting for thing: nats: no responders"); n != 3 {
		t.Errorf("%d waiting lines, want 3:\n%s", n, l.String())
	}
}

func TestRetryEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := Retry(ctx, Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}, "thing", nil,
		func(context.Context) error { return nats.ErrTimeout })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "last failure: nats: timeout") {
		t.Fatalf("err %v", err)
	}
}

// TestEnsureStreamRetryingWaitsForTheServer is the example's three
// coordinators started together: a role whose NATS server is not up yet
// (c1 embeds it and starts a moment later) fails at once with "outbound
// buffer limit exceeded" through plain EnsureStream, and comes up with
// EnsureStreamRetrying, logging what it waits for.
func TestEnsureStreamRetryingWaitsForTheServer(t *testing.T) {
	ts := startTestServer(t, 0)
	url := ts.URL()
	ts.Stop()
	nc, js := connect(t, url)
	if err := EnsureStream(testCtx(t, 5*time.Second), js, 1); !errors.Is(err, nats.ErrReconnectBufExceeded) {
		t.Fatalf("EnsureStream before the server is up: %v (want the failure the roles died of)", err)
	}
	var l logLines
	done := make(chan error, 1)
	go func() {
		done <- EnsureStreamRetrying(testCtx(t, 30*time.Second), Backoff{Min: 20 * time.Millisecond, Max: 100 * time.Millisecond},
			nc, js, 1, 2*time.Second, l.logf)
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("returned %v before the server started", err)
	default:
	}
	ts.Restart()
	if err := <-done; err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	if !strings.Contains(l.String(), "waiting for a NATS server at "+url) {
		t.Errorf("no line saying what it waited for:\n%s", l.String())
	}
	if _, err := js.Stream(testCtx(t, 5*time.Second), StreamName); err != nil {
		t.Fatal(err)
	}
}
