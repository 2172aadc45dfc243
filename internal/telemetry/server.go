package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"dcpi/internal/httpauth"
)

// Handler serves a process's endpoints:
//
//	/metrics  the registry in Prometheus's exposition format
//	/healthz  200 "ok" while the process serves HTTP at all
//	/readyz   200 "ready" when every readiness condition holds, else 503
//	          with one line per unmet condition
//
// A scrape whose collectors fail answers 500 with the error
// (promhttp.HTTPErrorOnError), never a partial exposition that would look
// like counters reset.
func Handler(g prometheus.Gatherer, ready *Readiness) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if unmet := ready.Check(); len(unmet) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready:\n%s\n", strings.Join(unmet, "\n"))
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("no page %q here: this server has /metrics, /healthz and /readyz", r.URL.Path), http.StatusNotFound)
	})
	return mux
}

// Server is a running telemetry endpoint.
type Server struct {
	ln  net.Listener
	srv *http.Server
	err chan error
}

// Serve listens on addr (host:port; port 0 picks one, see URL) and serves
// Handler(g, ready) until Close; with a token, /metrics only to requests
// that carry it (httpauth.Guard; /healthz and /readyz stay open to
// probes).
func Serve(addr string, g prometheus.Gatherer, ready *Readiness, token string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics endpoint %s: %w", addr, err)
	}
	h := httpauth.Guard(token, Handler(g, ready), "/healthz", "/readyz")
	s := &Server{ln: ln, err: make(chan error, 1),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { s.err <- s.srv.Serve(ln) }()
	return s, nil
}

// URL is the endpoint's base URL, http://host:port (no path).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops serving, waiting up to a few seconds for scrapes in flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.err; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
