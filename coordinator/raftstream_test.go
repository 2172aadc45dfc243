package coordinator

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	dto "github.com/prometheus/client_model/go"

	"dcpi/transport/auth"
	"dcpi/transport/natstest"
	"dcpi/wire"
)

// raftCreds issues Raft credentials from one key store, as an operator
// does with dcpi coordinator raft-cert.
type raftCreds struct {
	t  testing.TB
	st *auth.Store
}

func newRaftCreds(t testing.TB) *raftCreds {
	st, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &raftCreds{t: t, st: st}
}

// tls is replica id's side of the Raft TLS, freshly issued.
func (rc *raftCreds) tls(id string) *tls.Config {
	rc.t.Helper()
	cred, err := rc.st.IssueRaftCredential(id)
	if err != nil {
		rc.t.Fatal(err)
	}
	rt, err := auth.LoadRaftTLS(cred.File)
	if err != nil {
		rc.t.Fatal(err)
	}
	return rt.Config
}

// newTLSCluster is newCluster with every replica's Raft under mutual TLS
// from creds.
func newTLSCluster(t testing.TB, n int, creds *raftCreds) *cluster {
	return newTunedCluster(t, n, func(c *Config) { c.RaftTLS = creds.tls(c.ID) })
}

// TestRaftTLSCluster: three replicas under mutual TLS elect a leader and
// replicate, and a fourth joins by a snapshot (AppendEntries, RequestVote
// and InstallSnapshot all over TLS).
func TestRaftTLSCluster(t *testing.T) {
	creds := newRaftCreds(t)
	c := newTLSCluster(t, 3, creds)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStreams(testRand(t))
	for range 60 {
		if _, err := cl.Propose(ctx, s.deltas(2, 60, 1, "h1", "h2"), []*wire.ImageRecord{imageRec(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.reps[c.leader()].Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	// Past the trailing logs, so that r4 needs the snapshot.
	for range 5 {
		if _, err := cl.Propose(ctx, s.deltas(2, 30, 2, "h1", "h2"), nil); err != nil {
			t.Fatal(err)
		}
	}
	c.ids = append(c.ids, "r4")
	c.addrs = append(c.addrs, freeAddrs(t, 1)...)
	c.dirs = append(c.dirs, filepath.Join(t.TempDir(), "r4"))
	c.reps = append(c.reps, nil)
	cfg := c.config(3)
	cfg.Bootstrap = nil
	r4, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.reps[3] = r4
	if err := cl.AddVoter(ctx, "r4", r4.Addr()); err != nil {
		t.Fatal(err)
	}
	c.converged()
	if gen := r4.FSM().generation(); gen < 2 {
		t.Errorf("r4 did not restore a snapshot (generation %d)", gen)
	}
	for _, r := range c.reps {
		if n := refusedHandshakes(r); n != 0 {
			t.Errorf("%s refused %v handshakes of its peers", r.ID(), n)
		}
	}
}

// refusedHandshakes is r's count of Raft connections refused at the
// handshake.
func refusedHandshakes(r *Replica) float64 {
	var m dto.Metric
	r.metrics.raftRefused.Write(&m)
	return m.GetCounter().GetValue()
}

// rogueStream is an attacker's raft.StreamLayer: raft's own transport,
// so what it sends are real RPCs, over a dial of the attacker's choice.
type rogueStream struct {
	net.Listener
	dial func(addr string, timeout time.Duration) (net.Conn, error)
}

func (s rogueStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dial(string(addr), timeout)
}

// rogueTransport is raft's network transport over dial, as a process on
// the network without a replica's credential would run it.
func rogueTransport(t *testing.T, dial func(string, time.Duration) (net.Conn, error)) *raft.NetworkTransport {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransportWithLogger(rogueStream{Listener: l, dial: dial}, 1, 5*time.Second, hclog.NewNullLogger())
	t.Cleanup(func() { tr.Close() })
	return tr
}

// attack sends a follower what a rogue leader would: an AppendEntries of
// a term far ahead (which a follower adopts before it looks at the log),
// a RequestVote, and an InstallSnapshot that would replace its database.
// It returns the first RPC's error.
func attack(tr *raft.NetworkTransport, id, addr string, term, last uint64, snapshot bool) error {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("rogue"), Addr: []byte(tr.LocalAddr())}
	target, sid := raft.ServerAddress(addr), raft.ServerID(id)
	ae := raft.AppendEntriesRequest{RPCHeader: hdr, Term: term, PrevLogEntry: last, PrevLogTerm: term,
		Entries: []*raft.Log{{Index: last + 1, Term: term, Type: raft.LogCommand, Data: []byte("forged")}}, LeaderCommitIndex: last + 1}
	err := tr.AppendEntries(sid, target, &ae, &raft.AppendEntriesResponse{})
	if !snapshot {
		return err
	}
	rv := raft.RequestVoteRequest{RPCHeader: hdr, Term: term + 1, LastLogIndex: last + 1, LastLogTerm: term + 1}
	if verr := tr.RequestVote(sid, target, &rv, &raft.RequestVoteResponse{}); err == nil {
		err = verr
	}
	data := []byte("not a snapshot")
	is := raft.InstallSnapshotRequest{RPCHeader: hdr, SnapshotVersion: raft.SnapshotVersionMax, Term: term + 2,
		LastLogIndex: last + 10, LastLogTerm: term + 2, Size: int64(len(data))}
	if serr := tr.InstallSnapshot(sid, target, &is, &raft.InstallSnapshotResponse{}, bytes.NewReader(data)); err == nil {
		err = serr
	}
	return err
}

// TestRaftPlainTCPIsOpen is the attack on plain TCP Raft (what every
// replica ran before Raft TLS): a process that reaches the port makes a
// follower adopt its term. TestRaftRoguePeersRefused is the same attack
// refused.
func TestRaftPlainTCPIsOpen(t *testing.T) {
	c := newCluster(t, 3)
	li := c.leader()
	fi := (li + 1) % 3
	f := c.reps[fi]
	term := f.Raft().CurrentTerm() + 1000
	tr := rogueTransport(t, func(addr string, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout("tcp", addr, timeout)
	})
	if err := attack(tr, f.ID(), f.Addr(), term, f.Raft().LastIndex(), false); err != nil {
		t.Fatalf("AppendEntries over plain TCP: %v", err)
	}
	if got := f.Raft().CurrentTerm(); got < term {
		t.Fatalf("follower's term %d after a rogue AppendEntries of term %d: plain Raft should have taken it", got, term)
	}
}

// TestRaftRoguePeersRefused: replicas under mutual TLS refuse at the
// handshake a peer without a certificate, with another cluster's replica
// certificate, with the cluster's NATS server certificate, and with a
// certificate the NATS CA signed for the replicas' name, whichever RPC it
// sends; the follower's term, log and database stay as they were.
func TestRaftRoguePeersRefused(t *testing.T) {
	creds := newRaftCreds(t)
	c := newTLSCluster(t, 3, creds)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newStreams(testRand(t))
	if _, err := cl.Propose(ctx, s.deltas(1, 20, 1, "h1"), nil); err != nil {
		t.Fatal(err)
	}
	before := c.converged()
	li := c.leader()
	f := c.reps[(li+1)%3]
	raftCA := x509.NewCertPool()
	caPEM, err := os.ReadFile(creds.st.RaftCAFile())
	if err != nil {
		t.Fatal(err)
	}
	raftCA.AppendCertsFromPEM(caPEM)
	// The NATS server's certificate of this very cluster's key store, and
	// one its CA signs with everything a replica's has but the CA.
	natsSrv, err := creds.st.ServerTLS(nil)
	if err != nil {
		t.Fatal(err)
	}
	natsSigned := signWithNATSCA(t, creds.st)
	tlsDial := func(certs []tls.Certificate) func(string, time.Duration) (net.Conn, error) {
		return func(addr string, timeout time.Duration) (net.Conn, error) {
			cfg := &tls.Config{RootCAs: raftCA, ServerName: auth.RaftName, Certificates: certs, MinVersion: tls.VersionTLS13}
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", addr, cfg)
		}
	}
	other := newRaftCreds(t).tls("r2")
	rogues := []struct {
		name string
		dial func(string, time.Duration) (net.Conn, error)
	}{
		{"plain TCP", func(addr string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, timeout)
		}},
		{"TLS without a certificate", tlsDial(nil)},
		{"another cluster's replica certificate", tlsDial(other.Certificates)},
		{"the NATS server's certificate", tlsDial(natsSrv.Certificates)},
		{"the NATS CA's certificate for a replica", tlsDial([]tls.Certificate{natsSigned})},
	}
	for _, rg := range rogues {
		t.Run(rg.name, func(t *testing.T) {
			refused := refusedHandshakes(f)
			term, last := f.Raft().CurrentTerm(), f.Raft().LastIndex()
			rogueTerm := term + 1000
			if err := attack(rogueTransport(t, rg.dial), f.ID(), f.Addr(), rogueTerm, last, true); err == nil {
				t.Fatal("a rogue RPC was answered")
			}
			waitFor(t, "the follower to count the refused handshakes", 10*time.Second, func() bool {
				return refusedHandshakes(f) >= refused+3
			})
			if got := f.Raft().CurrentTerm(); got >= rogueTerm {
				t.Errorf("follower's term %d: it took the rogue's %d", got, rogueTerm)
			}
		})
	}
	// Nothing the rogues sent is in any replica's log or database.
	if after := c.converged(); after != before {
		t.Errorf("the database changed under the rogues:\n%s\nwas\n%s", after, before)
	}
	for _, r := range c.reps {
		if r.Raft().CurrentTerm() >= 1000 {
			t.Errorf("%s at term %d", r.ID(), r.Raft().CurrentTerm())
		}
	}
}

// signWithNATSCA makes a certificate the store's NATS CA signs with
// everything a replica's Raft certificate has: the replicas' name and
// both usages. Only the dedicated Raft CA keeps it out.
func signWithNATSCA(t *testing.T, st *auth.Store) tls.Certificate {
	t.Helper()
	read := func(f string) []byte {
		b, err := os.ReadFile(filepath.Join(st.Dir(), f))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := pem.Decode(b)
		return p.Bytes
	}
	ca, err := x509.ParseCertificate(read("ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := x509.ParseECPrivateKey(read("ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "r9"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames: []string{auth.RaftName}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestRaftDialRefusesRogueServer: a replica dialling an address where a
// rogue listens with a certificate not from the Raft CA sends it nothing.
func TestRaftDialRefusesRogueServer(t *testing.T) {
	creds := newRaftCreds(t)
	natsSrv, err := creds.st.ServerTLS(nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", natsSrv)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b := make([]byte, 64)
		n, _ := c.Read(b)
		got <- b[:n]
	}()
	layer, err := listenTLS("127.0.0.1:0", nil, creds.tls("r1"), func(net.Addr, error) {})
	if err != nil {
		t.Fatal(err)
	}
	defer layer.Close()
	if c, err := layer.Dial(raft.ServerAddress(l.Addr().String()), 5*time.Second); err == nil {
		c.Close()
		t.Fatal("dialled a server with the NATS certificate")
	}
	if b := <-got; len(b) != 0 {
		t.Errorf("the rogue server read %q", b)
	}
}

// TestRaftSecurityRule: plain Raft beyond loopback is refused before
// anything is opened, unless the operator opts out.
func TestRaftSecurityRule(t *testing.T) {
	creds := newRaftCreds(t)
	noClientAuth := creds.tls("r1").Clone()
	noClientAuth.ClientAuth = tls.VerifyClientCertIfGiven
	for _, tc := range []struct {
		addr     string
		tls      *tls.Config
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:7001", nil, false, true},
		{"localhost:7001", nil, false, true},
		{"[::1]:7001", nil, false, true},
		{"0.0.0.0:7001", nil, false, false},
		{":7001", nil, false, false},
		{"10.0.0.5:7001", nil, false, false},
		{"raft.example:7001", nil, false, false},
		{"10.0.0.5:7001", nil, true, true},
		{"10.0.0.5:7001", creds.tls("r1"), false, true},
		{"10.0.0.5:7001", noClientAuth, false, false},
	} {
		err := CheckRaftSecurity(Config{RaftAddr: tc.addr, RaftTLS: tc.tls, RaftInsecure: tc.insecure})
		if (err == nil) != tc.ok {
			t.Errorf("%s tls=%v insecure=%v: %v", tc.addr, tc.tls != nil, tc.insecure, err)
		}
		if tc.tls == nil && !tc.ok && !errors.Is(err, ErrRaftInsecure) {
			t.Errorf("%s: %v, want ErrRaftInsecure", tc.addr, err)
		}
	}
	// Refused, Start creates nothing.
	dir := filepath.Join(t.TempDir(), "r1")
	_, err := Start(Config{ID: "r1", RaftAddr: "0.0.0.0:0", DataDir: dir, NATS: connect(t, natstest.StartServer(t, natstest.Options{}).URL())})
	if !errors.Is(err, ErrRaftInsecure) {
		t.Fatalf("Start beyond loopback without TLS: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused replica left %s: %v", dir, err)
	}
}
