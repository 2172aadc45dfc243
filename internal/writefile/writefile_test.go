package writefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWith: the file holds what write wrote; write's error is returned;
// a name that cannot be created is an error and write is not called.
func TestWith(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := With(p, func(w io.Writer) error { _, err := io.WriteString(w, "hello"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "hello" {
		t.Errorf("file holds %q, %v", b, err)
	}
	boom := errors.New("boom")
	if err := With(p, func(io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("write's error: %v", err)
	}
	called := false
	if err := With(t.TempDir(), func(io.Writer) error { called = true; return nil }); err == nil || called {
		t.Errorf("a directory's name: %v, write called %v", err, called)
	}
}
