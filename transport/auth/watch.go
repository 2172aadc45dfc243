package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// loadedName is the file listing the public keys the running server
// accepts, written after each change, for AddHost's callers to wait on.
const loadedName = "loaded"

// WatchInterval is how often Watch looks for issued or revoked keys.
const WatchInterval = 500 * time.Millisecond

// keysSettle is how long after a change to the keys' directories Watch
// lists them every poll anyway, since two changes within one tick of the
// kernel's clock can leave a directory's time as it was.
const keysSettle = 2 * time.Second

// Loaded records users as the ones the running server accepts.
func (s *Store) Loaded(users []*server.NkeyUser) error {
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = u.Nkey
	}
	return writeSecret(filepath.Join(s.dir, loadedName), []byte(strings.Join(keys, "\n")+"\n"))
}

// Watch gives set the store's users whenever a key is issued or revoked
// (polled every interval) until ctx ends, and records each list set
// accepted (Loaded). Errors go to logf; the server keeps its last users.
func (s *Store) Watch(ctx context.Context, interval time.Duration, set func([]*server.NkeyUser) error, logf func(string, ...any)) {
	var last []string
	// version is the fingerprint (keysVersion) the users in last were
	// read under, "" when it cannot be trusted to skip a listing.
	fingerprint := func() string {
		v, stable, err := s.keysVersion(time.Now(), keysSettle)
		if err != nil || !stable {
			return ""
		}
		return v
	}
	version := fingerprint()
	if users, err := s.Users(); err == nil {
		last = publicKeys(users)
	} else {
		version = ""
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v := fingerprint()
		if v != "" && v == version {
			continue
		}
		users, err := s.Users()
		if err != nil {
			logf("auth: reading credentials: %v", err)
			continue
		}
		keys := publicKeys(users)
		if slices.Equal(keys, last) {
			version = v
			continue
		}
		if err := set(users); err != nil {
			logf("auth: loading credentials: %v", err)
			continue
		}
		last, version = keys, v
		if err := s.Loaded(users); err != nil {
			logf("auth: %v", err)
		}
		logf("auth: %d users (roles and hosts) accepted", len(users))
	}
}

func publicKeys(users []*server.NkeyUser) []string {
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = u.Nkey
	}
	return keys
}

// ErrNotLoaded is wrapped by WaitLoaded's error when no running server
// took the key in time.
var ErrNotLoaded = errors.New("no running server has loaded the key")

// WaitLoaded waits until the running server accepts publicKey (see Watch),
// at most timeout.
func (s *Store) WaitLoaded(publicKey string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		data, _ := os.ReadFile(filepath.Join(s.dir, loadedName))
		if slices.Contains(strings.Fields(string(data)), publicKey) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("auth: %w after %v (is the server running on %s? it loads keys when it starts)", ErrNotLoaded, timeout, filepath.Dir(s.dir))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
