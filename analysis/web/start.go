package web

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"dcpi/internal/httpauth"
)

// Door is who may use the UI: anyone on loopback; beyond it, requests
// that carry the bearer token of TokenFile (or, without one, of the file
// httpauth.EnvTokenFile names), or, with neither, a token made for this
// run when Generate allows, which the URL carries.
type Door struct {
	TokenFile string
	Generate  bool
}

// Served is a running UI.
type Served struct {
	*http.Server
	// URL is where a browser finds it, with the token for the first
	// visit when it needs one.
	URL string
	// Note says, beyond loopback, which token requests need ("" on
	// loopback).
	Note string
}

// Start serves the UI over b at addr in the background, behind door
// (httpauth.Policy, httpauth.Guard); Shutdown stops it. logf hears of
// internal errors (nil: standard error). An address of every interface
// (":8080") gets the machine's host name in the URL, not a loopback
// address it would not only be reachable at.
func Start(addr string, b Backend, logf func(string, ...any), door Door) (*Served, error) {
	token, generated, err := httpauth.Policy(addr, door.TokenFile, door.Generate)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("web: listen at %s: %w", addr, err)
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
	sv := &Served{Server: srv, URL: "http://" + net.JoinHostPort(host, port) + "/"}
	if token != "" {
		sv.URL += "?token=" + token
		how := "the token of " + cmp.Or(door.TokenFile, "$"+httpauth.EnvTokenFile)
		if generated {
			how = "the token in the URL above, made for this run (--token-file keeps one)"
		}
		sv.Note = fmt.Sprintf("%s is beyond loopback: requests need %s", addr, how)
	}
	return sv, nil
}

// Serve is dcpi web: the UI over b at addr until ctx ends, its URL (and,
// beyond loopback, the token it needs) said on w first.
func Serve(ctx context.Context, w io.Writer, addr string, b Backend, door Door) error {
	srv, err := Start(addr, b, nil, door)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "dcpi web: serving %s at %s\n", b.Where(), srv.URL)
	if srv.Note != "" {
		fmt.Fprintf(w, "dcpi web: %s\n", srv.Note)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
