package web

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"dcpi/internal/httpauth"
)

// Start serves the UI over b at addr in the background and returns the
// server (Shutdown stops it) and its URL. With a token the UI answers
// only requests that carry it (httpauth.Guard), and the URL carries it
// for a browser's first visit. logf hears of internal errors (nil:
// standard error). An address of every interface (":8080") gets the
// machine's host name in the URL, not a loopback address it would not
// only be reachable at.
func Start(addr string, b Backend, logf func(string, ...any), token string) (*http.Server, string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("web: listen at %s: %w", addr, err)
	}
	if logf == nil {
		logf = log.New(os.Stderr, "", log.LstdFlags).Printf
	}
	srv := &http.Server{Handler: httpauth.Guard(token, New(b, logf)), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	host, port, _ := net.SplitHostPort(l.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		}
	}
	u := "http://" + net.JoinHostPort(host, port) + "/"
	if token != "" {
		u += "?token=" + token
	}
	return srv, u, nil
}
