package enroll

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"dcpi/internal/slogf"
	"dcpi/transport"
	"dcpi/transport/auth"
)

// startTLS starts a secured server listening beyond loopback (so with
// TLS and a CA) and returns it with its URL on 127.0.0.1.
func startTLS(t *testing.T) (*auth.Server, string) {
	t.Helper()
	t.Setenv("DCPI_AUTH_REGISTRY", filepath.Join(t.TempDir(), "registry"))
	srv, err := auth.StartServer(transport.ServerConfig{Dir: t.TempDir(), Host: "0.0.0.0", Logger: slogf.Test(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	if !srv.Store.HasCA() {
		t.Fatal("no CA beyond loopback")
	}
	return srv, strings.Replace(strings.Replace(srv.ClientURL(), "0.0.0.0", "127.0.0.1", 1), "nats://", "tls://", 1)
}

func encode(t *testing.T, b Bundle) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := b.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestIssueInstallRevoke: a bundle issued on the cluster installs on its
// host as three 0600 files with which the host connects over TLS; the
// wrong host, an expired or a malformed bundle, and (after revoke-host)
// a revoked key are refused with their error and write nothing.
func TestIssueInstallRevoke(t *testing.T) {
	srv, url := startTLS(t)
	now := time.Now()
	b, err := Issue(srv.Store, Request{Host: "alpha7", URLs: []string{url}, Labels: map[string]string{"rack": "r1"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.WaitLoaded(b.Key, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	data := encode(t, b)
	probe := Probe(5 * time.Second)
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		data []byte
		host string
		now  time.Time
		want error
	}{
		{"wrong host", data, "alpha8", now, ErrWrongHost},
		{"expired", data, "alpha7", b.Expires, ErrExpired},
		{"truncated", data[:len(data)/2], "alpha7", now, ErrMalformed},
		{"empty", nil, "alpha7", now, ErrMalformed},
	} {
		dir := filepath.Join(t.TempDir(), "etc")
		_, err := Install(ctx, tc.data, InstallOptions{Dir: dir, Host: tc.host, Now: tc.now, Probe: probe})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if got := dirFiles(t, dir); len(got) != 0 {
			t.Errorf("%s: wrote %v", tc.name, got)
		}
	}

	dir := filepath.Join(t.TempDir(), "etc")
	in, err := Install(ctx, data, InstallOptions{Dir: dir, Host: "alpha7", Owner: "no-such-user-here", Now: now, Probe: probe})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dirFiles(t, dir), []string{CAFile, ConfigFile, SeedFile}; !reflect.DeepEqual(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	for _, p := range in.Files {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", p, st.Mode(), err)
		}
	}
	nc, err := transport.Connect(transport.ConnConfig{URLs: []string{url}, CredsFile: filepath.Join(dir, SeedFile), CAFile: filepath.Join(dir, CAFile)})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !nc.IsConnected() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !nc.IsConnected() || !nc.TLSRequired() {
		t.Fatalf("connected %v, TLS %v", nc.IsConnected(), nc.TLSRequired())
	}
	nc.Close()
	cfg, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	for _, want := range []string{`"hostname":"alpha7"`, `"rack":"r1"`, url, filepath.Join(dir, SeedFile)} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("%s lacks %s:\n%s", ConfigFile, want, cfg)
		}
	}

	if n, err := srv.Store.RevokeHost("alpha7", b.Key); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for err = probe(ctx, b); !errors.Is(err, ErrRevoked) && time.Now().Before(deadline); err = probe(ctx, b) {
		time.Sleep(100 * time.Millisecond)
	}
	dir2 := filepath.Join(t.TempDir(), "etc")
	if _, err := Install(ctx, data, InstallOptions{Dir: dir2, Host: "alpha7", Now: now, Probe: probe}); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked: %v", err)
	}
	if got := dirFiles(t, dir2); len(got) != 0 {
		t.Errorf("revoked: wrote %v", got)
	}
}

// TestIssueRefusesBadRequests: a request that fails its checks, or whose
// bundle cannot be written, issues no key.
func TestIssueRefusesBadRequests(t *testing.T) {
	st, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []Request{
		{Host: "alpha7"},
		{Host: "alpha7", URLs: []string{"http://x:1"}},
		{Host: "alpha7", URLs: []string{"nats://x"}},
		{Host: "bad host", URLs: []string{"nats://x:1"}},
		{Host: "alpha7", URLs: []string{"nats://x:1"}, Labels: map[string]string{"host": "y"}},
		{Host: "alpha7", URLs: []string{"nats://x:1"}, Valid: -time.Hour},
	} {
		if _, err := Issue(st, req, time.Now()); err == nil {
			t.Errorf("%+v: issued", req)
		}
	}
	existing := filepath.Join(t.TempDir(), "alpha7.dcpi-bundle")
	os.WriteFile(existing, nil, 0o600)
	if _, err := IssueFile(st, Request{Host: "alpha7", URLs: []string{"nats://x:1"}}, existing, time.Now()); err == nil {
		t.Error("IssueFile replaced a file")
	}
	if hosts, _ := st.Hosts(); len(hosts) != 0 {
		t.Errorf("keys issued for %v", hosts)
	}
}

// validBundle is a well-formed bundle with a fresh key, for the decoder's tests.
func validBundle(t testing.TB) Bundle {
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	return Bundle{Format: Format, Host: "alpha1", Key: pub, Seed: string(seed), URLs: []string{"nats://127.0.0.1:4222"},
		Labels: map[string]string{"service": "db"}, Issued: at, Expires: at.Add(DefaultValid)}
}

// TestDecodeRefuses: each part that disagrees is malformed.
func TestDecodeRefuses(t *testing.T) {
	other, _ := nkeys.CreateUser()
	otherPub, _ := other.PublicKey()
	acct, _ := nkeys.CreateAccount()
	acctSeed, _ := acct.Seed()
	for name, spoil := range map[string]func(*Bundle){
		"format":       func(b *Bundle) { b.Format = "dcpi-enrollment/2" },
		"host":         func(b *Bundle) { b.Host = "a.b" },
		"key":          func(b *Bundle) { b.Key = otherPub },
		"account seed": func(b *Bundle) { b.Seed = string(acctSeed) },
		"ca":           func(b *Bundle) { b.CA = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" },
		"no urls":      func(b *Bundle) { b.URLs = nil },
		"url":          func(b *Bundle) { b.URLs = []string{"nats://u:p@h:1"} },
		"label":        func(b *Bundle) { b.Labels = map[string]string{"1x": "y"} },
		"expires":      func(b *Bundle) { b.Expires = b.Issued },
	} {
		b := validBundle(t)
		spoil(&b)
		if _, err := Decode(encode(t, b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	good := encode(t, validBundle(t))
	extra := bytes.Replace(good, []byte(`"format"`), []byte(`"extra": 1, "format"`), 1)
	for name, data := range map[string][]byte{"unknown field": extra, "two documents": append(good, good...),
		"too big": append(good, bytes.Repeat([]byte(" "), MaxBundleSize)...)} {
		if _, err := Decode(data); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzDecode: no input panics the decoder, and what it accepts encodes
// back to a bundle it decodes the same.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	validBundle(f).Encode(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"dcpi-enrollment/1"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		again, err := Decode(encode(t, b))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(b, again) {
			t.Fatalf("round trip: %+v != %+v", b, again)
		}
	})
}
