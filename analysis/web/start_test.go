package web

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/internal/httpauth"
)

// TestStartDoor: on loopback the UI is open and says nothing of tokens;
// beyond loopback it refuses to start without a token unless it may make
// one, and then the URL carries the token, the note says so, and a
// request without it is refused while the URL's is served; a token file
// is named in the note and its token is the one required.
func TestStartDoor(t *testing.T) {
	t.Setenv(httpauth.EnvTokenFile, "")
	b := &testBackend{src: fleet(false), hosts: []string{"alpha0", "alpha1"}}
	quiet := func(string, ...any) {}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar} // ?token= sets a cookie and redirects
	get := func(url string) int {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	srv, err := Start("127.0.0.1:0", b, quiet, Door{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(srv.URL, "token") || srv.Note != "" || get(srv.URL) != http.StatusOK {
		t.Errorf("loopback: URL %s, note %q", srv.URL, srv.Note)
	}
	srv.Shutdown(context.Background())

	if _, err := Start("0.0.0.0:0", b, quiet, Door{}); err == nil || !strings.Contains(err.Error(), httpauth.EnvTokenFile) {
		t.Fatalf("beyond loopback without a token: %v, want a refusal naming %s", err, httpauth.EnvTokenFile)
	}
	srv, err = Start("0.0.0.0:0", b, quiet, Door{Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	bare, _, _ := strings.Cut(srv.URL, "?")
	if !strings.Contains(srv.URL, "?token=") || !strings.Contains(srv.Note, "made for this run") {
		t.Errorf("generated token: URL %s, note %q", srv.URL, srv.Note)
	}
	if code := get(bare); code != http.StatusUnauthorized {
		t.Errorf("a request without the token: %d, want 401", code)
	}
	if code := get(srv.URL); code != http.StatusOK {
		t.Errorf("the URL with its token: %d, want 200", code)
	}

	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv2, err := Start("0.0.0.0:0", b, quiet, Door{TokenFile: file, Generate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Shutdown(context.Background())
	if !strings.HasSuffix(srv2.URL, "?token=0123456789abcdef0123") || !strings.Contains(srv2.Note, file) {
		t.Errorf("token file: URL %s, note %q", srv2.URL, srv2.Note)
	}
}
