package localrun

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dcpi/storage"
)

// matmulConfig is a two-host run of matmul for seconds (0: until it
// exits), into out.
func matmulConfig(t *testing.T, out string, seconds float64) Config {
	return runConfig(t, out, "matmul", seconds)
}

// TestProfilePrintsAndCommits: Profile prints the table and a balanced
// conservation line, commits the database, says where it went with a
// quoted --db for a path that needs it, and keeps the earlier one as .old
// on a second run.
func TestProfilePrintsAndCommits(t *testing.T) {
	out := filepath.Join(t.TempDir(), "my prof.db")
	for i := range 2 {
		var w bytes.Buffer
		code, err := Profile(t.Context(), &w, ProfileConfig{Config: matmulConfig(t, out, 0.02), Limit: 3}, nil)
		if err != nil || code != 0 {
			t.Fatalf("run %d: code %d, %v\n%s", i+1, code, err, w.String())
		}
		got := w.String()
		for _, want := range []string{
			"dcpi profile: matmul 88 on 2 hosts (alpha0 to alpha1) of 1 CPU, 0.02",
			"Total samples for event type cycles",
			": balanced",
			"was still running at the --seconds 0.02 limit",
			"profile written to " + out,
			"see it with dcpi prof --db '" + out + "', dcpi list --db '" + out + "' PROCEDURE",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("run %d: no %q in\n%s", i+1, want, got)
			}
		}
		if kept := strings.Contains(got, "(the previous one is now "+out+".old)"); kept != (i == 1) {
			t.Errorf("run %d: says it kept the previous database: %v\n%s", i+1, kept, got)
		}
		if _, err := os.Stat(out); err != nil {
			t.Fatalf("run %d: no database: %v", i+1, err)
		}
	}
}

// TestProfileStoppedBySignal: a signal before the programs end stops
// them, says so for each one still running, still writes the profile,
// and returns 128+N.
func TestProfileStoppedBySignal(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.db")
	c := matmulConfig(t, out, 0)
	stop := make(chan os.Signal, 1)
	stop <- syscall.SIGINT
	var w bytes.Buffer
	code, err := Profile(t.Context(), &w, ProfileConfig{Config: c}, stop)
	if err != nil {
		t.Fatalf("%v\n%s", err, w.String())
	}
	if code != 128+int(syscall.SIGINT) {
		t.Errorf("exit code %d, want %d", code, 128+int(syscall.SIGINT))
	}
	if !strings.Contains(w.String(), "was still running at the interrupt") {
		t.Errorf("no note of the interrupt:\n%s", w.String())
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("an interrupted run wrote no profile: %v", err)
	}
}

// TestShellQuote quotes only what a shell would split or expand.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"dcpi-db": "dcpi-db", "/tmp/a.db": "/tmp/a.db", "": "''",
		"my db": "'my db'", "it's": `'it'\''s'`, "$HOME": "'$HOME'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStartRemovesAbandonedTemporaries: a run removes the temporary
// databases of earlier runs into the same output whose writers are gone
// (their lock free) and an empty one of a process that is gone (killed
// before it opened the database), and leaves one a live run holds open
// and a directory that holds something else.
func TestStartRemovesAbandonedTemporaries(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "p.db")
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		db, err := storage.Open(p, storage.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	killed := mk(".p.db.tmp-111")
	live := filepath.Join(dir, ".p.db.tmp-222")
	held, err := storage.Open(live, storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	notDB := filepath.Join(dir, ".p.db.tmp-333")
	if err := os.Mkdir(notDB, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notDB, "notes"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	other := mk(".q.db.tmp-444") // another output's
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	early := filepath.Join(dir, ".p.db.tmp-"+strconv.Itoa(gone.Process.Pid))
	if err := os.Mkdir(early, 0o755); err != nil {
		t.Fatal(err)
	}

	r, err := Start(matmulConfig(t, out, 0.001))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !slices.Equal(r.Removed, []string{killed, early}) && !slices.Equal(r.Removed, []string{early, killed}) {
		t.Errorf("removed %v, want %s and %s", r.Removed, killed, early)
	}
	for p, want := range map[string]bool{killed: false, early: false, live: true, notDB: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", p, err == nil, want)
		}
	}
}

// TestStopEndsABlockedRead: a read waiting for input that never comes
// returns end of file once the reader is stopped, and input read before
// is passed on whole.
func TestStopEndsABlockedRead(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	s := newStopReader(pr)
	go pw.Write([]byte("line\n"))
	b := make([]byte, 2)
	var got []byte
	for len(got) < 5 {
		n, err := s.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b[:n]...)
	}
	if string(got) != "line\n" {
		t.Fatalf("read %q", got)
	}
	ended := make(chan error, 1)
	go func() { _, err := s.Read(b); ended <- err }()
	time.Sleep(10 * time.Millisecond)
	s.Stop()
	select {
	case err := <-ended:
		if err != io.EOF {
			t.Fatalf("a stopped read: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stopped read still waits")
	}
}

// TestAbortLeavesNothing: a run aborted with its database open and
// uncommitted leaves nothing beside the output; one aborted after its
// commit keeps the database.
func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "p.db")
	r, err := Start(matmulConfig(t, out, 0.001))
	if err != nil {
		t.Fatal(err)
	}
	r.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("an aborted run left %v", ents)
	}
	out = filepath.Join(dir, "q.db") // the aborted run's database is still open in this process
	r, err = Start(matmulConfig(t, out, 0.001))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	r.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "q.db" {
		t.Fatalf("after a commit and an abort: %v", ents)
	}
}
