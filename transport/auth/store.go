package auth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"dcpi/transport"
)

// Role is what a credential may do (Permissions).
type Role string

// The roles. A host's role is Host with the host's name.
const (
	// Coordinator may do everything: it creates the streams, serves
	// queries and requests, and talks to its replicas. Administrative
	// commands (dcpi epoch cut, membership, pp upload) use it too.
	Coordinator Role = "coordinator"
	// Aggregator consumes and acknowledges the streams and proposes to
	// the coordinator.
	Aggregator Role = "aggregator"
	// Query may only ask the coordinator's query service and read the
	// image buckets: the analysis tools and dcpi web.
	Query Role = "query"
	// Host may publish only its own host's subjects (see Permissions).
	Host Role = "host"
)

// roleFiles are the roles with one shared key, generated on first start.
var roleFiles = []Role{Coordinator, Aggregator, Query}

// DirName is the directory under a server's data directory that holds
// the credentials.
const DirName = "auth"

// ErrUnknownHost is wrapped when a host has no credentials.
var ErrUnknownHost = errors.New("no credentials for host")

// Store is the credentials of one server, in its data directory.
type Store struct {
	dir string
}

// Open opens the credentials under dataDir, generating the directory and
// the roles' keys on first use. It refuses a directory or key file others
// may read (see transport.CheckSecretFile).
func Open(dataDir string) (*Store, error) {
	dir, err := filepath.Abs(filepath.Join(dataDir, DirName))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "hosts"), 0o700); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if err := checkPrivateDir(dir); err != nil {
		return nil, err
	}
	s := &Store{dir: dir}
	for _, r := range roleFiles {
		f := s.RoleFile(r)
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			if _, err := writeNewSeed(f, fmt.Sprintf("role %s", r)); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := readPublic(f); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// OpenExisting opens the credentials of a server's data directory that
// must already have them (a client finding its key, add-host).
func OpenExisting(dataDir string) (*Store, error) {
	dir := filepath.Join(dataDir, DirName)
	if _, err := os.Stat(filepath.Join(dir, string(Coordinator)+".nk")); err != nil {
		return nil, fmt.Errorf("auth: %s holds no dcpi NATS credentials (start dcpi nats-server or a coordinator on it first): %w", dataDir, err)
	}
	return Open(dataDir)
}

// Dir is the credentials directory.
func (s *Store) Dir() string { return s.dir }

// RoleFile is the seed file of a role with one shared key.
func (s *Store) RoleFile(r Role) string { return filepath.Join(s.dir, string(r)+".nk") }

// HostKey is one of a host's credentials.
type HostKey struct {
	Host, PublicKey, File string
	Issued                time.Time
}

// AddHost issues a new key for host, beside any it has (so a rotation can
// start the agent on the new key before the old is revoked).
func (s *Store) AddHost(host string) (HostKey, error) {
	if err := transport.CheckHost(host); err != nil {
		return HostKey{}, fmt.Errorf("auth: add host: %w", err)
	}
	dir := filepath.Join(s.dir, "hosts", host)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return HostKey{}, fmt.Errorf("auth: add host %s: %w", host, err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return HostKey{}, fmt.Errorf("auth: add host %s: %w", host, err)
	}
	pub, _ := kp.PublicKey()
	f := filepath.Join(dir, pub+".nk")
	if err := writeSeed(f, kp, "host "+host); err != nil {
		return HostKey{}, err
	}
	return HostKey{Host: host, PublicKey: pub, File: f, Issued: time.Now()}, nil
}

// HostKeys lists host's keys, oldest first.
func (s *Store) HostKeys(host string) ([]HostKey, error) {
	if err := transport.CheckHost(host); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "hosts", host))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: host %s: %w", host, err)
	}
	var keys []HostKey
	for _, e := range ents {
		pub, ok := strings.CutSuffix(e.Name(), ".nk")
		if !ok || !nkeys.IsValidPublicUserKey(pub) {
			continue
		}
		k := HostKey{Host: host, PublicKey: pub, File: filepath.Join(s.dir, "hosts", host, e.Name())}
		if info, err := e.Info(); err == nil {
			k.Issued = info.ModTime()
		}
		keys = append(keys, k)
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].Issued.Before(keys[j].Issued) })
	return keys, nil
}

// Hosts lists the hosts with at least one key.
func (s *Store) Hosts() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "hosts"))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	var hosts []string
	for _, e := range ents {
		if e.IsDir() && transport.CheckHost(e.Name()) == nil {
			if ks, _ := s.HostKeys(e.Name()); len(ks) > 0 {
				hosts = append(hosts, e.Name())
			}
		}
	}
	return hosts, nil
}

// HostFile is the newest key file of host.
func (s *Store) HostFile(host string) (string, error) {
	keys, err := s.HostKeys(host)
	if err != nil {
		return "", err
	}
	if len(keys) == 0 {
		return "", fmt.Errorf("auth: %w %s in %s (issue them with dcpi nats-server add-host %s)", ErrUnknownHost, host, s.dir, host)
	}
	return keys[len(keys)-1].File, nil
}

// RevokeHost removes host's key publicKey, or every key of host when
// publicKey is empty, and reports how many it removed. A running server
// drops the revoked key within its Watch interval and disconnects the
// clients that used it.
func (s *Store) RevokeHost(host, publicKey string) (int, error) {
	keys, err := s.HostKeys(host)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if publicKey != "" && k.PublicKey != publicKey {
			continue
		}
		if err := os.Remove(k.File); err != nil {
			return n, fmt.Errorf("auth: revoke %s key %s: %w", host, k.PublicKey, err)
		}
		n++
	}
	if n == 0 {
		if publicKey != "" {
			return 0, fmt.Errorf("auth: revoke: host %s has no key %s", host, publicKey)
		}
		return 0, fmt.Errorf("auth: revoke: %w %s", ErrUnknownHost, host)
	}
	return n, nil
}

// Users are the server's users: the roles' keys and every host's, each
// with its role's permissions, sorted by public key. It reads every
// host's directory; Watch calls it only when a directory changed
// (keysVersion).
func (s *Store) Users() ([]*server.NkeyUser, error) {
	var users []*server.NkeyUser
	for _, r := range roleFiles {
		pub, err := readPublic(s.RoleFile(r))
		if err != nil {
			return nil, err
		}
		users = append(users, &server.NkeyUser{Nkey: pub, Permissions: Permissions(r, "", pub)})
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "hosts"))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	for _, e := range ents {
		h := e.Name()
		if !e.IsDir() || transport.CheckHost(h) != nil {
			continue
		}
		keys, err := s.HostKeys(h)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			users = append(users, &server.NkeyUser{Nkey: k.PublicKey, Permissions: Permissions(Host, h, k.PublicKey)})
		}
	}
	slices.SortFunc(users, func(a, b *server.NkeyUser) int { return strings.Compare(a.Nkey, b.Nkey) })
	return users, nil
}

// checkPrivateDir refuses a credentials directory that group or others
// may enter.
func checkPrivateDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("auth: %s is not a directory", dir)
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("auth: %w: %s has mode %04o, %w; chmod 700 %s", transport.ErrCredentials, dir, m, transport.ErrFileMode, dir)
	}
	return nil
}

// writeNewSeed makes a user key and writes its seed to path.
func writeNewSeed(path, what string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	if err := writeSeed(path, kp, what); err != nil {
		return "", err
	}
	pub, _ := kp.PublicKey()
	return pub, nil
}

// writeSeed writes kp's seed to path, 0600, atomically (a reader sees the
// old file or the whole new one).
func writeSeed(path string, kp nkeys.KeyPair, what string) error {
	seed, err := kp.Seed()
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	pub, _ := kp.PublicKey()
	text := fmt.Sprintf("# dcpi NATS credentials: %s, public key %s.\n# Secret: keep it mode 0600; give it to the role as nats.creds or DCPI_NATS_CREDS.\n%s\n", what, pub, seed)
	return writeSecret(path, []byte(text))
}

// writeSecret writes data to path with mode 0600 through a temporary file
// and a rename.
func writeSecret(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("auth: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("auth: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("auth: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}

// readPublic reads a seed file and returns its public key.
func readPublic(path string) (string, error) {
	if err := transport.CheckSecretFile(path); err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	kp, err := transport.ParseUserSeed(data)
	if err != nil {
		return "", fmt.Errorf("auth: %s: %w", path, err)
	}
	pub, _ := kp.PublicKey()
	return pub, nil
}

// keysVersion is a cheap fingerprint of the keys on disk: the hosts
// directory's and every host directory's modification time. Issuing or
// revoking a key adds or removes a file in its host's directory (and a
// new host a directory in hosts/), which changes that directory's time;
// so an unchanged fingerprint means unchanged users, and Watch need not
// list them (at 1,000 hosts listing costs ~30 ms, a stat of each
// directory a few). A directory time is as coarse as the kernel's clock
// tick, so two changes within one tick can share it: a fingerprint with
// a time under settle old is not to be trusted yet (stable false).
func (s *Store) keysVersion(now time.Time, settle time.Duration) (version string, stable bool, err error) {
	hostsDir := filepath.Join(s.dir, "hosts")
	var b strings.Builder
	st, err := os.Stat(hostsDir)
	if err != nil {
		return "", false, fmt.Errorf("auth: %w", err)
	}
	newest := st.ModTime()
	fmt.Fprintf(&b, "%d;", st.ModTime().UnixNano())
	ents, err := os.ReadDir(hostsDir)
	if err != nil {
		return "", false, fmt.Errorf("auth: %w", err)
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			return "", false, fmt.Errorf("auth: %w", err)
		}
		if info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		fmt.Fprintf(&b, "%s:%d;", e.Name(), info.ModTime().UnixNano())
	}
	return b.String(), now.Sub(newest) >= settle, nil
}
