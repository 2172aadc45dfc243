// Package enroll moves one host's credentials from the cluster to the
// host as one file, the bundle: its NKey (issued by transport/auth's
// store, as dcpi nats-server add-host does), the CA that verifies the
// NATS server, the servers' URLs and the host's labels. Issue makes a
// bundle on the cluster's side; Install checks one on the host and writes
// the least the node agent needs (its seed, the CA, a configuration
// fragment) with nothing half-written. Revocation stays the store's
// (RevokeHost); this package keeps no state of its own.
package enroll

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"dcpi/transport"
	"dcpi/wire"
)

// Format names the bundle's layout; a decoder refuses any other.
const Format = "dcpi-enrollment/1"

// MaxBundleSize caps what Decode reads (bytes): a bundle is a seed, a CA
// certificate or two, a few URLs and at most wire.MaxLabels labels.
const MaxBundleSize = 256 << 10

// maxURLs caps the NATS URLs of one bundle.
const maxURLs = 64

// Errors callers test (errors.Is); every error of Decode and Check wraps one.
var (
	ErrMalformed = errors.New("malformed enrollment bundle")
	ErrWrongHost = errors.New("enrollment bundle is for another host")
	ErrExpired   = errors.New("enrollment bundle has expired")
	ErrRevoked   = errors.New("the cluster does not accept the bundle's key (revoked?)")
)

// Bundle is one host's enrollment.
type Bundle struct {
	Format  string            `json:"format"`
	Host    string            `json:"host"`
	Key     string            `json:"key"`  // the NKey's public key, as revoke-host --key takes it
	Seed    string            `json:"seed"` // the NKey's seed: the secret
	CA      string            `json:"ca,omitempty"`
	URLs    []string          `json:"urls"`
	Labels  map[string]string `json:"labels,omitempty"`
	Issued  time.Time         `json:"issued"`
	Expires time.Time         `json:"expires"` // installable until then; the key itself lasts until revoked
}

// Encode writes b as the bundle file's text (JSON, one document).
func (b Bundle) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(b)
}

// Decode reads a bundle and checks it is well formed (its own parts
// agree); Check then says whether this host may install it now.
func Decode(data []byte) (Bundle, error) {
	if len(data) > MaxBundleSize {
		return Bundle{}, fmt.Errorf("%w: %d bytes, over %d", ErrMalformed, len(data), MaxBundleSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return Bundle{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return Bundle{}, fmt.Errorf("%w: more than one document", ErrMalformed)
	}
	if err := b.valid(); err != nil {
		return Bundle{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	b.Issued, b.Expires = b.Issued.UTC(), b.Expires.UTC()
	return b, nil
}

// valid checks the bundle's parts, naming the field at fault.
func (b Bundle) valid() error {
	if b.Format != Format {
		return fmt.Errorf("format %q: want %q", b.Format, Format)
	}
	if err := transport.CheckHost(b.Host); err != nil {
		return fmt.Errorf("host: %v", err)
	}
	kp, err := transport.ParseUserSeed([]byte(b.Seed))
	if err != nil {
		return fmt.Errorf("seed: %v", err)
	}
	if pub, _ := kp.PublicKey(); pub != b.Key {
		return fmt.Errorf("key %q is not the seed's (%s)", b.Key, pub)
	}
	if b.CA != "" {
		if err := checkCA([]byte(b.CA)); err != nil {
			return fmt.Errorf("ca: %v", err)
		}
	}
	if len(b.URLs) == 0 || len(b.URLs) > maxURLs {
		return fmt.Errorf("urls: %d, want 1 to %d", len(b.URLs), maxURLs)
	}
	for _, u := range b.URLs {
		if err := checkURL(u); err != nil {
			return fmt.Errorf("urls: %q: %v", u, err)
		}
	}
	if err := wire.CheckLabels(b.Labels); err != nil {
		return fmt.Errorf("labels: %v", err)
	}
	if b.Issued.IsZero() || !b.Expires.After(b.Issued) {
		return fmt.Errorf("expires %s is not after issued %s", b.Expires.Format(time.RFC3339), b.Issued.Format(time.RFC3339))
	}
	return nil
}

// Check says whether host may install b at now: the bundle names it and
// has not expired.
func (b Bundle) Check(host string, now time.Time) error {
	if b.Host != host {
		return fmt.Errorf("%w: it is host %s's, this is %s (--host to name this host)", ErrWrongHost, b.Host, host)
	}
	if !now.Before(b.Expires) {
		return fmt.Errorf("%w: it expired at %s; issue a new one (dcpi enroll issue %s)", ErrExpired, b.Expires.UTC().Format(time.RFC3339), b.Host)
	}
	return nil
}

// checkCA accepts PEM holding one or more certificates and nothing else.
func checkCA(data []byte) error {
	n := 0
	for rest := data; len(bytes.TrimSpace(rest)) > 0; n++ {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil || blk.Type != "CERTIFICATE" {
			return errors.New("want PEM certificates only")
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return err
		}
	}
	if n == 0 {
		return errors.New("no certificate")
	}
	return nil
}

// checkURL accepts a NATS client URL: nats:// or tls://, a host and a port.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "nats" && u.Scheme != "tls" {
		return errors.New("want a nats:// or tls:// URL")
	}
	if u.Hostname() == "" || u.Port() == "" || u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return errors.New("want scheme://host:port and nothing else")
	}
	return nil
}
