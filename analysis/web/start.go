package web

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

// Start serves the UI over b at addr in the background and returns the
// server (Shutdown stops it) and its URL. logf hears of internal errors
// (nil: standard error).
func Start(addr string, b Backend, logf func(string, ...any)) (*http.Server, string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("web: listen at %s: %w", addr, err)
	}
	if logf == nil {
		logf = log.New(os.Stderr, "", log.LstdFlags).Printf
	}
	srv := &http.Server{Handler: New(b, logf), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	host, port, _ := net.SplitHostPort(l.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return srv, "http://" + net.JoinHostPort(host, port) + "/", nil
}
