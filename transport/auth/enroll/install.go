package enroll

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/transport"
)

// The files Install writes in its directory, each mode 0600: all a host
// keeps of its enrollment.
const (
	SeedFile   = "host.nk"         // the host's NKey seed (nats.creds)
	CAFile     = "ca.pem"          // the NATS server's CA (nats.ca), when the bundle has one
	ConfigFile = "enrollment.yaml" // nats.urls, nats.creds, nats.ca, sim.hostname, node.labels
)

// InstallOptions say where and as whom a bundle is installed.
type InstallOptions struct {
	Dir   string    // e.g. /etc/dcpi
	Host  string    // this host's name: the bundle must be its
	Owner string    // user owning the files when it exists ("" or absent: the caller)
	Now   time.Time // for the bundle's expiry
	// Probe, when set, connects with the bundle's key before anything is
	// written: a key the cluster refuses is ErrRevoked.
	Probe func(context.Context, Bundle) error
}

// Installed says what Install wrote.
type Installed struct {
	Bundle Bundle
	Files  []string // the paths written, ConfigFile last
}

// Install checks the bundle data and writes it under o.Dir. Every check
// (well formed, this host's, not expired, the key accepted) comes before
// the first write, and the files are written beside their places and
// renamed in, the configuration last: an error leaves the directory as
// it was.
func Install(ctx context.Context, data []byte, o InstallOptions) (Installed, error) {
	b, err := Decode(data)
	if err != nil {
		return Installed{}, err
	}
	if err := b.Check(o.Host, o.Now); err != nil {
		return Installed{}, err
	}
	if o.Probe != nil {
		if err := o.Probe(ctx, b); err != nil {
			return Installed{}, err
		}
	}
	uid, gid := -1, -1
	if o.Owner != "" {
		if u, err := user.Lookup(o.Owner); err == nil {
			uid, _ = strconv.Atoi(u.Uid)
			gid, _ = strconv.Atoi(u.Gid)
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return Installed{}, fmt.Errorf("enroll: %w", err)
	}
	seedText := fmt.Sprintf("# dcpi NATS credentials: host %s, public key %s (dcpi enroll install).\n# Secret: keep it mode 0600.\n%s\n", b.Host, b.Key, b.Seed)
	files := []struct{ name, text string }{{SeedFile, seedText}}
	if b.CA != "" {
		files = append(files, struct{ name, text string }{CAFile, b.CA})
	}
	files = append(files, struct{ name, text string }{ConfigFile, configText(b, o.Dir)})
	var tmps, out []string
	defer func() {
		for _, t := range tmps {
			os.Remove(t) // those not renamed
		}
	}()
	for _, f := range files {
		t, err := writeTemp(o.Dir, f.name, f.text, uid, gid)
		if err != nil {
			return Installed{}, err
		}
		tmps = append(tmps, t)
	}
	for i, f := range files {
		p := filepath.Join(o.Dir, f.name)
		if err := os.Rename(tmps[i], p); err != nil {
			return Installed{}, fmt.Errorf("enroll: %w", err)
		}
		out = append(out, p)
	}
	tmps = nil
	return Installed{Bundle: b, Files: out}, nil
}

// configText is the configuration fragment a node reads through its
// file's "enrollment:" key (config.Config.Enrollment). JSON's flow style
// is YAML, so every string is quoted as JSON quotes it.
func configText(b Bundle, dir string) string {
	q := func(v any) string { s, _ := json.Marshal(v); return string(s) }
	nats := map[string]any{"urls": b.URLs, "creds": filepath.Join(dir, SeedFile)}
	if b.CA != "" {
		nats["ca"] = filepath.Join(dir, CAFile)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# dcpi enrollment of host %s, key %s, issued %s (dcpi enroll install).\n", b.Host, b.Key, b.Issued.Format(time.RFC3339))
	fmt.Fprintf(&sb, "nats: %s\nsim: %s\n", q(nats), q(map[string]string{"hostname": b.Host}))
	if len(b.Labels) > 0 {
		fmt.Fprintf(&sb, "node: %s\n", q(map[string]any{"labels": b.Labels}))
	}
	return sb.String()
}

// writeTemp writes text to a new 0600 file beside dir/name, owned by
// uid:gid when they are not -1, synced, and returns its path.
func writeTemp(dir, name, text string, uid, gid int) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return "", fmt.Errorf("enroll: %w", err)
	}
	err = f.Chmod(0o600)
	if err == nil && uid >= 0 {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		_, err = f.WriteString(text)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("enroll: write %s: %w", name, err)
	}
	return f.Name(), nil
}

// Probe connects to the bundle's servers with its key and CA, within
// timeout: a server that refuses the key says ErrRevoked (or not yet
// loaded: the server loads an issued key within a second).
func Probe(timeout time.Duration) func(context.Context, Bundle) error {
	return func(ctx context.Context, b Bundle) error {
		kp, err := transport.ParseUserSeed([]byte(b.Seed))
		if err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		opts := []nats.Option{nats.Nkey(b.Key, kp.Sign), nats.Timeout(timeout), nats.NoReconnect(),
			nats.CustomInboxPrefix(transport.InboxPrefix(b.Key))}
		if b.CA != "" {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM([]byte(b.CA))
			opts = append(opts, nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
		}
		nc, err := nats.Connect(strings.Join(b.URLs, ","), opts...)
		if errors.Is(err, nats.ErrAuthorization) {
			return fmt.Errorf("%w: %s refused key %s; issue a new bundle", ErrRevoked, b.URLs[0], b.Key)
		}
		if err != nil {
			return fmt.Errorf("enroll: cannot check the key at %s: %w (--offline installs without checking)", strings.Join(b.URLs, ","), err)
		}
		nc.Close()
		return nil
	}
}
