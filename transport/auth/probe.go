package auth

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// authRequired reads the INFO line a NATS server sends every new
// connection (before any TLS) and says whether it asks for credentials.
func authRequired(raw string, timeout time.Duration) (bool, error) {
	host := raw
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return false, err
		}
		host = u.Host
	}
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "4222")
	}
	c, err := net.DialTimeout("tcp", host, timeout)
	if err != nil {
		return false, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return false, err
	}
	body, ok := strings.CutPrefix(line, "INFO ")
	if !ok {
		return false, fmt.Errorf("%s: not a NATS server", host)
	}
	var info struct {
		AuthRequired bool `json:"auth_required"`
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		return false, fmt.Errorf("%s: INFO: %w", host, err)
	}
	return info.AuthRequired, nil
}

// ResolveWait is Resolve for a role that may start before its server
// (Resolve looks for a server that is not registered yet): with no
// credentials given and loopback URLs, it waits until the server answers,
// and then, if the server asks for credentials, until it has registered
// them (a few milliseconds after it listens). wait false (a one-shot
// tool) gives up at once on a server that does not answer. A server that
// asks for credentials this user cannot find is an error saying how to
// give them.
func ResolveWait(ctx context.Context, urls []string, creds, ca string, role Role, host string, wait bool, logf func(string, ...any)) (Creds, error) {
	c, err := Resolve(urls, creds, ca, role, host)
	if err != nil || c.File != "" || len(urls) == 0 {
		return c, err
	}
	for _, u := range urls {
		if _, loop := loopbackPort(u); !loop {
			return c, nil // remote: credentials must be given
		}
	}
	start := time.Now()
	lastLog := start
	// A server registers its credentials right after it listens: a role
	// started with it waits a little for that; a tool hardly.
	patience := 10 * time.Second
	if !wait {
		patience = time.Second
	}
	for {
		req, err := authRequired(urls[0], time.Second)
		switch {
		case err == nil && !req:
			return c, nil // a server without authentication
		case err == nil && time.Since(start) > patience:
			return Creds{}, fmt.Errorf("%w: the NATS server at %s requires credentials and none of this user's local servers registered its own; "+
				"give the role's credentials file (nats.creds or DCPI_NATS_CREDS, and nats.ca or DCPI_NATS_CA for TLS; dcpi nats-server add-host issues a host's; see docs/security.md)",
				ErrNoCredentials, strings.Join(urls, ","))
		case err != nil && !wait:
			return c, nil // the connection will say it cannot reach it
		}
		if err != nil && time.Since(lastLog) > 5*time.Second {
			logf("waiting for a NATS server at %s to find its credentials (%.0fs so far; is it running?)", urls[0], time.Since(start).Seconds())
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return Creds{}, fmt.Errorf("%w: stopped waiting for the NATS server at %s: %w", ErrNoCredentials, urls[0], ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if c, err = Resolve(urls, creds, ca, role, host); err != nil || c.File != "" {
			return c, err
		}
	}
}
