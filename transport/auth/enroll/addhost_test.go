package enroll

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAddHost: with URLs, AddHost writes a bundle the running server's
// key is loaded for and refuses to replace it (issuing no second key);
// without, it prints the key file and the CA the host verifies with.
func TestAddHost(t *testing.T) {
	srv, url := startTLS(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "alpha3.dcpi-bundle")
	var w bytes.Buffer
	if err := AddHost(&w, srv.Store, Request{Host: "alpha3", URLs: []string{url}}, path, time.Now()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(data)
	if err != nil || b.Host != "alpha3" || !strings.Contains(w.String(), "host alpha3: key "+b.Key+", bundle "+path) {
		t.Fatalf("bundle %+v (%v), report %q", b, err, w.String())
	}
	if err := AddHost(&w, srv.Store, Request{Host: "alpha3", URLs: []string{url}}, path, time.Now()); err == nil {
		t.Fatal("a second bundle replaced the first")
	}
	if keys, _ := filepath.Glob(filepath.Join(srv.Store.Dir(), "hosts", "alpha3", "*")); len(keys) != 1 {
		t.Errorf("keys of alpha3 after a refused second bundle: %v, want the one", keys)
	}
	w.Reset()
	if err := AddHost(&w, srv.Store, Request{Host: "alpha4"}, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if out := w.String(); !strings.HasPrefix(out, "host alpha4: key U") || !strings.Contains(out, srv.Store.CAFile()) || strings.Contains(out, "not loaded") {
		t.Errorf("report %q: want the key, loaded, and the CA", out)
	}
}
