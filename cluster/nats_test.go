package cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/config"
	"dcpi/transport/auth"
)

// TestUnreachableSaysWhy: a tool's failure to connect names its cause by
// the error's identity — refused credentials, TLS, or no server — however
// the error was wrapped.
func TestUnreachableSaysWhy(t *testing.T) {
	urls := []string{"nats://127.0.0.1:4222"}
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("connect: %w", nats.ErrAuthorization), "refused the credentials"},
		{nats.ErrAuthRevoked, "refused the credentials"},
		{fmt.Errorf("handshake: %w", x509.UnknownAuthorityError{}), "over TLS"},
		{nats.ErrSecureConnRequired, "over TLS"},
		{nil, "cannot reach a NATS server at nats://127.0.0.1:4222"},
		{fmt.Errorf("dial tcp: connection refused"), "cannot reach a NATS server"},
		// Words alone are not a cause: only the error's identity is.
		{fmt.Errorf("authorization x509 tls"), "cannot reach a NATS server"},
	} {
		got := unreachable(urls, auth.Query, c.err).Error()
		if !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}

// TestConnectRoleStopsWithItsContext: a role waiting for its NATS server
// (a loopback URL where nothing listens yet, and no credentials of this
// user's) stops when its context ends — a SIGTERM during the wait — with
// the context's error, instead of waiting on.
func TestConnectRoleStopsWithItsContext(t *testing.T) {
	t.Setenv("DCPI_AUTH_REGISTRY", filepath.Join(t.TempDir(), "registry"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + l.Addr().String()
	l.Close() // a port nothing listens on
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ConnectRole(ctx, config.NATS{URLs: []string{url}}, auth.Aggregator, "", "test", nil)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("ConnectRole returned before its context ended: %v", err)
	case <-time.After(300 * time.Millisecond): // still waiting for the server, as a role does
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("after the context ended: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ConnectRole kept waiting after its context ended")
	}
}
