package fleet

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesBeforeLoad: a missing recording option, an unreadable
// file and a file that is not a recording are each refused with an error
// naming them, before any cluster starts (Binary names nothing that could
// run) or temporary directory is made.
func TestRunRefusesBeforeLoad(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.rec")
	if err := os.WriteFile(junk, []byte("not a recording"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := Options{Hosts: 1, Seconds: 1, Conns: 1, Aggregators: 1, BufferKB: 1, Heartbeat: 1, Prefix: "lg", Binary: "/nonexistent/dcpi"}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no recording", func(o *Options) {}, "--recording"},
		{"missing file", func(o *Options) { o.Recording = filepath.Join(dir, "none.rec") }, "none.rec"},
		{"not a recording", func(o *Options) { o.Recording = junk }, "junk.rec"},
	} {
		o := good
		tc.edit(&o)
		err := Run(context.Background(), io.Discard, o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the runs left %d entries in %s, want only the junk file", len(entries), dir)
	}
}
