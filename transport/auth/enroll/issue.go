package enroll

import (
	"errors"
	"fmt"
	"os"
	"time"

	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
)

// DefaultValid is how long a bundle may be installed after it is issued.
const DefaultValid = 72 * time.Hour

// Request is what the cluster's operator says of a new host.
type Request struct {
	Host   string
	URLs   []string          // the NATS servers the host connects to
	Labels map[string]string // the host's labels (node.labels)
	Valid  time.Duration     // 0: DefaultValid
}

// Issue issues host a new key in st (beside any it has, as add-host does:
// a re-enrollment is a rotation) and returns its bundle. The request is
// checked before a key is made, so a refused request issues nothing.
func Issue(st *auth.Store, req Request, now time.Time) (Bundle, error) {
	if req.Valid == 0 {
		req.Valid = DefaultValid
	}
	if req.Valid < 0 {
		return Bundle{}, errors.New("enroll: validity must be positive")
	}
	b := Bundle{Format: Format, Host: req.Host, URLs: req.URLs, Labels: req.Labels,
		Issued: now.UTC().Truncate(time.Second)}
	b.Expires = b.Issued.Add(req.Valid)
	if err := transport.CheckHost(b.Host); err != nil {
		return Bundle{}, fmt.Errorf("enroll: %w", err)
	}
	if err := wire.CheckLabels(b.Labels); err != nil {
		return Bundle{}, fmt.Errorf("enroll: %w", err)
	}
	if len(b.URLs) == 0 {
		return Bundle{}, errors.New("enroll: no NATS URL (--url tls://HOST:PORT)")
	}
	for _, u := range b.URLs {
		if err := checkURL(u); err != nil {
			return Bundle{}, fmt.Errorf("enroll: --url %q: %w", u, err)
		}
	}
	if st.HasCA() {
		ca, err := os.ReadFile(st.CAFile())
		if err != nil {
			return Bundle{}, fmt.Errorf("enroll: %w", err)
		}
		b.CA = string(ca)
	}
	k, err := st.AddHost(b.Host)
	if err != nil {
		return Bundle{}, err
	}
	data, err := os.ReadFile(k.File)
	if err != nil {
		return Bundle{}, fmt.Errorf("enroll: %w", err)
	}
	kp, err := transport.ParseUserSeed(data)
	if err != nil {
		return Bundle{}, fmt.Errorf("enroll: %s: %w", k.File, err)
	}
	seed, _ := kp.Seed()
	b.Key, b.Seed = k.PublicKey, string(seed)
	if err := b.valid(); err != nil {
		return Bundle{}, fmt.Errorf("enroll: %w", err)
	}
	return b, nil
}

// IssueFile is Issue writing the bundle to path, mode 0600. path is
// created first, refusing to replace a file, so a bundle that could not
// be written leaves no key issued.
func IssueFile(st *auth.Store, req Request, path string, now time.Time) (Bundle, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Bundle{}, fmt.Errorf("enroll: %w", err)
	}
	b, err := Issue(st, req, now)
	if err == nil {
		err = b.Encode(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return Bundle{}, err
	}
	return b, nil
}
