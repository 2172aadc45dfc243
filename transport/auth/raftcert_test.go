package auth

import (
	"bytes"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dcpi/transport"
)

func openTestStore(t *testing.T) *Store {
	t.Helper()
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestIssueRaftCredential: an issued credential loads as mutual TLS 1.3
// for its replica, its file and the Raft CA's key are private, and the
// Raft CA is not the NATS server's.
func TestIssueRaftCredential(t *testing.T) {
	st := openTestStore(t)
	if _, err := st.ServerTLS(nil); err != nil {
		t.Fatal(err)
	}
	cred, err := st.IssueRaftCredential("c1")
	if err != nil {
		t.Fatal(err)
	}
	if cred.File != st.RaftCredentialFile("c1") || time.Until(cred.NotAfter) < RaftValidity-2*time.Hour {
		t.Errorf("issued %+v", cred)
	}
	for _, f := range []string{cred.File, st.raftCAKeyFile()} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v", f, err, fi.Mode())
		}
	}
	nats, _ := os.ReadFile(st.CAFile())
	raftCA, _ := os.ReadFile(st.RaftCAFile())
	if bytes.Equal(nats, raftCA) {
		t.Error("the Raft CA is the NATS CA")
	}
	rt, err := LoadRaftTLS(cred.File)
	if err != nil {
		t.Fatal(err)
	}
	c := rt.Config
	if rt.ID != "c1" || c.MinVersion != 0x0304 || c.ClientAuth.String() != "RequireAndVerifyClientCert" || c.ServerName != RaftName || c.VerifyConnection == nil {
		t.Errorf("loaded %+v, config %+v", rt, c)
	}
	// A second credential is signed by the same CA.
	c2, err := st.IssueRaftCredential("c2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRaftTLS(c2.File); err != nil {
		t.Fatal(err)
	}
	if _, err := st.IssueRaftCredential("../c3"); err == nil {
		t.Error("a replica ID with a path was issued")
	}
}

// TestLoadRaftTLSRefuses: a missing, shared, damaged, mixed or foreign
// credential is one error naming the file, wrapping ErrRaftCredential.
func TestLoadRaftTLSRefuses(t *testing.T) {
	st := openTestStore(t)
	good, err := st.IssueRaftCredential("c1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := openTestStore(t).IssueRaftCredential("c1")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good.File)
	otherData, _ := os.ReadFile(other.File)
	blocks := func(b []byte) []*pem.Block {
		var out []*pem.Block
		for {
			var p *pem.Block
			if p, b = pem.Decode(b); p == nil {
				return out
			}
			out = append(out, p)
		}
	}
	join := func(bs ...*pem.Block) []byte {
		var b bytes.Buffer
		for _, p := range bs {
			pem.Encode(&b, p)
		}
		return b.Bytes()
	}
	g, o := blocks(data), blocks(otherData)
	if len(g) != 3 {
		t.Fatalf("issued %d PEM blocks, want 3", len(g))
	}
	flipped := bytes.Clone(g[0].Bytes)
	flipped[len(flipped)-10] ^= 1 // in the signature
	// The NATS server's certificate and key, with the Raft CA beside them.
	if _, err := st.ServerTLS(nil); err != nil {
		t.Fatal(err)
	}
	srvCert, _ := os.ReadFile(filepath.Join(st.Dir(), "server.pem"))
	srvKey, _ := os.ReadFile(filepath.Join(st.Dir(), "server-key.pem"))
	natsServer := append(append(srvCert, srvKey...), join(g[2])...)

	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte // nil: no file
		mode os.FileMode
	}{
		{"missing", nil, 0},
		{"empty", []byte{}, 0o600},
		{"readable by others", data, 0o644},
		{"truncated", data[:len(data)/2], 0o600},
		{"no CA", join(g[0], g[1]), 0o600},
		{"bit flipped in the certificate", join(&pem.Block{Type: "CERTIFICATE", Bytes: flipped}, g[1], g[2]), 0o600},
		{"another credential's key", join(g[0], o[1], g[2]), 0o600},
		{"another cluster's CA", join(g[0], g[1], o[2]), 0o600},
		{"another cluster's credential with this CA", join(o[0], o[1], g[2]), 0o600},
		{"the NATS server's certificate", natsServer, 0o600},
		{"a stray block", join(g[0], g[1], g[2], &pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte{1}}), 0o600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, tc.name+".pem")
			if tc.data != nil {
				if err := os.WriteFile(f, tc.data, tc.mode); err != nil {
					t.Fatal(err)
				}
				os.Chmod(f, tc.mode)
			}
			_, err := LoadRaftTLS(f)
			if !errors.Is(err, ErrRaftCredential) {
				t.Fatalf("LoadRaftTLS = %v, want ErrRaftCredential", err)
			}
			t.Log(err)
			if tc.mode == 0o644 && !errors.Is(err, transport.ErrFileMode) {
				t.Errorf("LoadRaftTLS = %v, want ErrFileMode too", err)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(f)) || bytes.ContainsRune([]byte(err.Error()), '\n') {
				t.Errorf("error %q does not name %s on one line", err, f)
			}
		})
	}
	if _, err := LoadRaftTLS(dir); !errors.Is(err, ErrRaftCredential) {
		t.Errorf("a directory: %v", err)
	}
}
