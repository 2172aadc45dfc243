// Package httpauth guards dcpi's HTTP endpoints (the web UI, /metrics)
// when they listen beyond loopback: a bearer token, read from a file the
// operator gives (DCPI_HTTP_TOKEN_FILE, or a command's --token-file) or
// made fresh by the process. On loopback they stay open, as before: any
// process of the machine could read the data directory anyway.
package httpauth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// EnvTokenFile names the file holding the token of every endpoint a
// process serves beyond loopback.
const EnvTokenFile = "DCPI_HTTP_TOKEN_FILE"

// cookieName carries the token in a browser after its first visit with
// ?token=, so the pages' links need not.
const cookieName = "dcpi_token"

// maxTokenFile bounds what ReadTokenFile reads.
const maxTokenFile = 4096

// ErrBadToken is wrapped by ReadTokenFile's refusals.
var ErrBadToken = errors.New("not a usable token file")

// Loopback says whether a listener at addr (host:port, as given to
// net.Listen) is reachable from this machine only: a loopback IP or
// "localhost". An empty host or an unspecified address (0.0.0.0, ::)
// means every interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// NewToken is a fresh random token: 32 bytes, hex.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// ReadTokenFile reads a token file: a regular file of one line of at
// least 16 printable characters, which group and others may not read
// (as ssh treats a private key).
func ReadTokenFile(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("token file %s: %w: not a regular file", path, ErrBadToken)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s: %w: mode %#o lets others read it (chmod 600 %s)", path, ErrBadToken, info.Mode().Perm(), path)
	}
	if info.Size() > maxTokenFile {
		return "", fmt.Errorf("token file %s: %w: %d bytes", path, ErrBadToken, info.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", fmt.Errorf("token file %s: %w: want one line of at least 16 printable characters", path, ErrBadToken)
	}
	return tok, nil
}

// Policy is the token an endpoint at an address requires: "" on
// loopback; beyond it, the token of file (or, with file "", of
// EnvTokenFile's); with neither, a fresh one when generate allows, else
// an error saying what to do.
func Policy(addr, file string, generate bool) (token string, generated bool, err error) {
	if Loopback(addr) {
		return "", false, nil
	}
	if file == "" {
		file = os.Getenv(EnvTokenFile)
	}
	if file != "" {
		tok, err := ReadTokenFile(file)
		return tok, false, err
	}
	if !generate {
		return "", false, fmt.Errorf("%s listens beyond loopback, so it needs a bearer token: set %s to a file holding one (mode 600; Prometheus sends it with authorization.credentials_file), or listen on 127.0.0.1", addr, EnvTokenFile)
	}
	tok, err := NewToken()
	return tok, true, err
}

// Guard serves next only to requests that carry token: the header
// "Authorization: Bearer TOKEN", the cookie a browser got on its first
// visit, or ?token=TOKEN, which sets that cookie and redirects to the
// same address without it. Paths in open (health checks) are served to
// anyone. An empty token guards nothing.
func Guard(token string, next http.Handler, open ...string) http.Handler {
	if token == "" {
		return next
	}
	want := []byte(token)
	ok := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range open {
			if r.URL.Path == p {
				next.ServeHTTP(w, r)
				return
			}
		}
		if h, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && ok(h) {
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(cookieName); err == nil && ok(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query(); q.Has("token") && ok(q.Get("token")) {
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del("token")
			u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="dcpi"`)
		http.Error(w, "this dcpi endpoint listens beyond loopback and needs its token (Authorization: Bearer, or ?token= once in a browser)", http.StatusUnauthorized)
	})
}
