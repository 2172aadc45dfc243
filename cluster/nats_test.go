package cluster

import (
	"crypto/x509"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

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
