package httpauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:80": true, "localhost:0": true, "127.3.4.5:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:1": false, "10.0.0.1:80": false,
		"example.com:80": false, "nonsense": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func writeToken(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadTokenFile: a token file is one line of 16 or more printable
// characters that only its owner may read; anything else is refused
// naming the file and the fix.
func TestReadTokenFile(t *testing.T) {
	good := writeToken(t, "0123456789abcdef0123\n", 0o600)
	if tok, err := ReadTokenFile(good); err != nil || tok != "0123456789abcdef0123" {
		t.Errorf("a good token file: %q %v", tok, err)
	}
	for name, p := range map[string]string{
		"readable by others": writeToken(t, "0123456789abcdef0123", 0o644),
		"too short":          writeToken(t, "short", 0o600),
		"two words":          writeToken(t, "0123456789 abcdef0123", 0o600),
		"a directory":        t.TempDir(),
		"too long":           writeToken(t, strings.Repeat("a", maxTokenFile+1), 0o600),
	} {
		if _, err := ReadTokenFile(p); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: %v, want ErrBadToken", name, err)
		}
	}
	if _, err := ReadTokenFile(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("a missing token file was read")
	}
}

// TestPolicy: loopback needs no token; beyond it the file's (or the
// environment's), a fresh one where allowed, else a refusal that says
// what to do.
func TestPolicy(t *testing.T) {
	t.Setenv(EnvTokenFile, "")
	if tok, _, err := Policy("127.0.0.1:0", "", false); tok != "" || err != nil {
		t.Errorf("loopback: %q %v", tok, err)
	}
	if _, _, err := Policy(":9100", "", false); err == nil || !strings.Contains(err.Error(), EnvTokenFile) {
		t.Errorf("every interface, no token: %v, want a refusal naming %s", err, EnvTokenFile)
	}
	tok, generated, err := Policy(":9100", "", true)
	if err != nil || !generated || len(tok) != 64 {
		t.Errorf("every interface, generated: %q %v %v", tok, generated, err)
	}
	f := writeToken(t, "from-the-environment-1", 0o600)
	t.Setenv(EnvTokenFile, f)
	if tok, generated, err := Policy("0.0.0.0:1", "", false); tok != "from-the-environment-1" || generated || err != nil {
		t.Errorf("the environment's file: %q %v %v", tok, generated, err)
	}
	g := writeToken(t, "from-the-flag-0000000", 0o600)
	if tok, _, err := Policy("0.0.0.0:1", g, false); tok != "from-the-flag-0000000" || err != nil {
		t.Errorf("the flag's file over the environment's: %q %v", tok, err)
	}
}

// TestGuard: without the token a request gets 401 and the page is not
// served; with it in the header or the cookie it is; ?token= sets the
// cookie and redirects to the address without it; open paths are open.
func TestGuard(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	served := 0
	h := Guard(token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ }), "/healthz")
	do := func(req *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	if w := do(httptest.NewRequest("GET", "/metrics", nil)); w.Code != http.StatusUnauthorized || served != 0 {
		t.Fatalf("no token: %d, served %d", w.Code, served)
	}
	bad := httptest.NewRequest("GET", "/metrics", nil)
	bad.Header.Set("Authorization", "Bearer "+token[:len(token)-1]+"x")
	if w := do(bad); w.Code != http.StatusUnauthorized || served != 0 {
		t.Fatalf("a wrong token: %d, served %d", w.Code, served)
	}
	ok := httptest.NewRequest("GET", "/metrics", nil)
	ok.Header.Set("Authorization", "Bearer "+token)
	if w := do(ok); w.Code != http.StatusOK || served != 1 {
		t.Fatalf("the bearer token: %d, served %d", w.Code, served)
	}
	w := do(httptest.NewRequest("GET", "/list?proc=main&token="+token, nil))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/list?proc=main" || served != 1 {
		t.Fatalf("?token=: %d to %q, served %d", w.Code, w.Header().Get("Location"), served)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Value != token || !cookies[0].HttpOnly {
		t.Fatalf("?token= set cookies %+v", cookies)
	}
	withCookie := httptest.NewRequest("GET", "/list?proc=main", nil)
	withCookie.AddCookie(cookies[0])
	if w := do(withCookie); w.Code != http.StatusOK || served != 2 {
		t.Fatalf("the cookie: %d, served %d", w.Code, served)
	}
	if w := do(httptest.NewRequest("GET", "/healthz", nil)); w.Code != http.StatusOK || served != 3 {
		t.Fatalf("an open path: %d, served %d", w.Code, served)
	}
	if Guard("", http.NotFoundHandler()) == nil {
		t.Fatal("no guard without a token")
	}
}
