package auth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The registry lets a role find the credentials of a server on the same
// machine run by the same Unix user, as ssh finds ~/.ssh: the server
// records "port -> credentials directory" in a directory only that user
// may enter, and a role connecting to a loopback URL without credentials
// looks its port up there. It grants nothing new: that user can read the
// server's data directory anyway. Another user, or another machine, needs
// credentials given explicitly (nats.creds).

// registryDir is the per-user directory of the registry, in the system's
// temporary directory (so it goes with a reboot, as the servers do).
func registryDir() string {
	if d := os.Getenv("DCPI_AUTH_REGISTRY"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "dcpi-"+strconv.Itoa(os.Getuid()), "nats")
}

// Register records that the server listening on port keeps its
// credentials in s.
func (s *Store) Register(port int) error {
	dir := registryDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("auth: registry: %w", err)
	}
	if err := checkPrivateDir(dir); err != nil {
		return fmt.Errorf("auth: registry: %w", err)
	}
	return writeSecret(filepath.Join(dir, strconv.Itoa(port)), []byte(s.dir+"\n"))
}

// Unregister removes port's record if it still names s (a later server on
// the port may have replaced it). A killed server leaves its record; the
// next server on the port replaces it, and one naming a removed directory
// is ignored.
func (s *Store) Unregister(port int) {
	f := filepath.Join(registryDir(), strconv.Itoa(port))
	if data, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(data)) == s.dir {
		os.Remove(f)
	}
}

// Lookup finds the credentials of the local server behind urls: all must
// be loopback URLs of one port that a server of this user registered.
// ok is false when there is no such server (a remote cluster, another
// user's server, none running).
func Lookup(urls []string) (s *Store, ok bool) {
	port := ""
	for _, u := range urls {
		p, loop := loopbackPort(u)
		if !loop || (port != "" && p != port) {
			return nil, false
		}
		port = p
	}
	if port == "" {
		return nil, false
	}
	dir := registryDir()
	if checkPrivateDir(dir) != nil {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(dir, port))
	if err != nil {
		return nil, false
	}
	authDir := strings.TrimSpace(string(data))
	if filepath.Base(authDir) != DirName {
		return nil, false
	}
	st, err := OpenExisting(filepath.Dir(authDir))
	if err != nil {
		return nil, false
	}
	return st, true
}

// loopbackPort returns the port of a nats:// or tls:// URL (or bare
// host:port) and whether its host is a loopback address.
func loopbackPort(raw string) (port string, loopback bool) {
	host := raw
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", false
		}
		host = u.Host
	}
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		h, p = host, "4222"
	}
	if h == "localhost" {
		return p, true
	}
	ip := net.ParseIP(h)
	return p, ip != nil && ip.IsLoopback()
}

// ErrNoCredentials is wrapped when a role has none to connect with.
var ErrNoCredentials = errors.New("no NATS credentials")
