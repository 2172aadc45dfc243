package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"dcpi/transport"
)

// RaftName is the DNS name every replica's Raft certificate carries and
// every replica checks in its peer's, dialling or accepted. Replicas are
// peers of equal trust that move between addresses, so the name says
// "a replica of this cluster", not where one listens; with the dedicated
// CA it keeps a certificate made for anything else (the NATS server's)
// from passing as a replica's even if the CAs were ever shared.
const RaftName = "dcpi-raft-replica"

// RaftValidity is how long an issued Raft credential is valid: issue the
// replica a new one (RaftCredential) and restart it before then.
const RaftValidity = 2 * 365 * 24 * time.Hour

// maxRaftCredBytes caps a credential file's read: an issued one is ~2 KB.
const maxRaftCredBytes = 64 << 10

// ErrRaftCredential is wrapped by every error about a Raft credential
// file: missing, readable by others, damaged, expired or not a replica's.
var ErrRaftCredential = errors.New("unusable Raft credential")

// replicaID is what a replica ID may be to name a credential file.
var replicaID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// RaftCAFile is the certificate of the Raft CA, which signs the
// replicas' Raft certificates and nothing else.
func (s *Store) RaftCAFile() string { return filepath.Join(s.dir, "raft-ca.pem") }

func (s *Store) raftCAKeyFile() string { return filepath.Join(s.dir, "raft-ca-key.pem") }

// RaftCredentialFile is where replica id's Raft credential is issued.
func (s *Store) RaftCredentialFile(id string) string {
	return filepath.Join(s.dir, "raft", id+".pem")
}

// RaftCred is an issued Raft credential.
type RaftCred struct {
	ID       string    // the replica's ID, the certificate's common name
	File     string    // certificate, key and the Raft CA in one PEM file, 0600
	NotAfter time.Time // when it stops being accepted
}

// IssueRaftCredential issues replica id a Raft credential: a key and a
// certificate for both ends of a connection (server and client
// authentication) signed by the store's Raft CA, made on first use (ten
// years) and kept apart from the NATS CA, so that no certificate the
// NATS side issues passes as a replica's. It replaces id's earlier
// credential file; a replica running on that one keeps it until it
// restarts (both are valid until they expire).
func (s *Store) IssueRaftCredential(id string) (RaftCred, error) {
	if !replicaID.MatchString(id) {
		return RaftCred{}, fmt.Errorf("auth: raft credential: replica ID %q: want letters, digits, '.', '_' or '-', at most 64", id)
	}
	ca, caKey, err := loadOrMakeCA(s.RaftCAFile(), s.raftCAKeyFile(), "dcpi Raft CA")
	if err != nil {
		return RaftCred{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return RaftCred{}, fmt.Errorf("auth: raft credential: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: id, OrganizationalUnit: []string{"dcpi raft replica"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(RaftValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{RaftName},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return RaftCred{}, fmt.Errorf("auth: raft credential: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return RaftCred{}, fmt.Errorf("auth: raft credential: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# dcpi Raft credential of replica %s, valid until %s.\n", id, tmpl.NotAfter.UTC().Format(time.DateOnly))
	fmt.Fprintf(&b, "# Secret: keep it mode 0600; give it to the replica as coordinator.raft_tls or --raft-tls.\n")
	pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	pem.Encode(&b, &pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	f := s.RaftCredentialFile(id)
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return RaftCred{}, fmt.Errorf("auth: raft credential: %w", err)
	}
	if err := writeSecret(f, b.Bytes()); err != nil {
		return RaftCred{}, err
	}
	return RaftCred{ID: id, File: f, NotAfter: tmpl.NotAfter}, nil
}

// RaftTLS is a replica's side of the Raft transport's mutual TLS, read
// from its credential file.
type RaftTLS struct {
	// Config is for both ends of every Raft connection: TLS 1.3, this
	// replica's certificate, and the peer's required and verified against
	// the Raft CA (and RaftName checked in it).
	Config   *tls.Config
	ID       string // the common name of this replica's certificate
	NotAfter time.Time
}

// LoadRaftTLS reads a Raft credential file (IssueRaftCredential): the
// replica's certificate, its key, then the CA certificates it trusts. It
// refuses a file group or others may read, a damaged one, a certificate
// the CA in the file did not sign, one expired, or one not made for a
// replica, each with an error naming the file.
func LoadRaftTLS(path string) (RaftTLS, error) {
	fail := func(format string, a ...any) (RaftTLS, error) {
		return RaftTLS{}, fmt.Errorf("auth: %w %s: %s", ErrRaftCredential, path, fmt.Sprintf(format, a...))
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return fail("%v", errors.Unwrap(err))
	case !st.Mode().IsRegular():
		return fail("not a regular file")
	case st.Mode().Perm()&0o077 != 0:
		return RaftTLS{}, fmt.Errorf("auth: %w %s: mode %04o, %w; chmod 600 %s", ErrRaftCredential, path, st.Mode().Perm(), transport.ErrFileMode, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fail("%v", errors.Unwrap(err))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRaftCredBytes+1))
	f.Close()
	if err != nil {
		return fail("%v", err)
	}
	if len(data) > maxRaftCredBytes {
		return fail("over %d bytes", maxRaftCredBytes)
	}
	var certs []*pem.Block
	var key *pem.Block
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE":
			certs = append(certs, b)
		case b.Type == "EC PRIVATE KEY" && key == nil:
			key = b
		default:
			return fail("unexpected PEM block %q", b.Type)
		}
	}
	if len(certs) < 2 || key == nil {
		return fail("want the replica's certificate, its key and the Raft CA's certificate (issue it with dcpi coordinator raft-cert)")
	}
	pair, err := tls.X509KeyPair(pem.EncodeToMemory(certs[0]), pem.EncodeToMemory(key))
	if err != nil {
		return fail("%v", err)
	}
	leaf, err := x509.ParseCertificate(certs[0].Bytes)
	if err != nil {
		return fail("replica certificate: %v", err)
	}
	pool := x509.NewCertPool()
	for _, b := range certs[1:] {
		ca, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return fail("CA certificate: %v", err)
		}
		pool.AddCert(ca)
	}
	// What a peer will check of this certificate, checked here first, so a
	// bad credential is one clear error at start rather than refused
	// handshakes in the peers' logs.
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: RaftName, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			return fail("%v", err)
		}
	}
	pair.Leaf = leaf
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ServerName:   RaftName,
		// A dialling replica checks RaftName as the server's name; an
		// accepting one checks it here, since Go verifies only a client
		// certificate's chain and usage.
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("raft: peer presented no certificate")
			}
			return cs.PeerCertificates[0].VerifyHostname(RaftName)
		},
	}
	return RaftTLS{Config: cfg, ID: leaf.Subject.CommonName, NotAfter: leaf.NotAfter}, nil
}
