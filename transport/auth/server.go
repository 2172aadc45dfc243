package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"dcpi/internal/slogf"
	"dcpi/transport"
)

// Server is an embedded NATS server that accepts only the store's users.
type Server struct {
	*transport.Server
	Store *Store
	// TLS says whether clients must use TLS (a non-loopback listener).
	TLS  bool
	stop context.CancelFunc
	done chan struct{}
	port int // registered
	once sync.Once
}

// StartServer starts transport.StartServer secured by the credentials in
// cfg.Dir (generated on first start): only their users connect, each with
// its role's permissions; TLS with the store's CA when cfg.Host is not a
// loopback address (loopback stays plain: only this machine's processes
// reach it, and they could read the keys anyway). It registers the server
// for local roles (Lookup) and loads issued and revoked host keys while it
// runs (Watch).
func StartServer(cfg transport.ServerConfig) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("auth: start server: no directory")
	}
	st, err := Open(cfg.Dir)
	if err != nil {
		return nil, err
	}
	users, err := st.Users()
	if err != nil {
		return nil, err
	}
	cfg.Users = users
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	secure := !IsLoopback(host)
	if secure {
		if cfg.TLS, err = st.ServerTLS([]string{host}); err != nil {
			return nil, err
		}
	}
	srv, err := transport.StartServer(cfg)
	if err != nil {
		return nil, err
	}
	if err := st.Loaded(users); err != nil {
		srv.Shutdown()
		return nil, err
	}
	if err := st.Register(srv.Port()); err != nil {
		srv.Shutdown()
		return nil, err
	}
	logf := slogf.Printf(cfg.Logger)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Server: srv, Store: st, TLS: secure, stop: cancel, done: make(chan struct{}), port: srv.Port()}
	go func() {
		defer close(s.done)
		st.Watch(ctx, WatchInterval, srv.SetUsers, logf)
	}()
	return s, nil
}

// Shutdown stops loading keys and stops the server.
// Stopping twice is harmless.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		s.stop()
		<-s.done
		s.Store.Unregister(s.port)
		s.Server.Shutdown()
	})
}

// Creds are a role's credentials file and the CA it verifies the server
// with (empty: none needed).
type Creds struct {
	File, CA string
}

// ForRole returns role's credentials in st (for a Host, host's newest key,
// issued now if host has none: a local role of the server's user could
// issue it anyway, see Lookup).
func (st *Store) ForRole(role Role, host string) (Creds, error) {
	var c Creds
	if st.HasCA() {
		c.CA = st.CAFile()
	}
	if role != Host {
		c.File = st.RoleFile(role)
		return c, nil
	}
	f, err := st.HostFile(host)
	if err == nil {
		c.File = f
		return c, nil
	}
	if !errors.Is(err, ErrUnknownHost) {
		return Creds{}, err
	}
	k, err := st.AddHost(host)
	if err != nil {
		return Creds{}, err
	}
	if err := st.WaitLoaded(k.PublicKey, 10*time.Second); err != nil {
		return Creds{}, fmt.Errorf("auth: issued credentials for host %s: %w", host, err)
	}
	c.File = k.File
	return c, nil
}

// Resolve returns the credentials a role connects to urls with: creds and
// ca when given (explicit configuration wins), else those of the local
// server behind urls (Lookup), else none (a server without
// authentication, or one that will refuse the connection).
func Resolve(urls []string, creds, ca string, role Role, host string) (Creds, error) {
	if creds != "" {
		return Creds{File: creds, CA: ca}, nil
	}
	st, ok := Lookup(urls)
	if !ok {
		return Creds{CA: ca}, nil
	}
	c, err := st.ForRole(role, host)
	if err != nil {
		return Creds{}, err
	}
	if ca != "" {
		c.CA = ca
	}
	return c, nil
}
