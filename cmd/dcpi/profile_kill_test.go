package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dcpi/storage"
)

// The kill test's knobs: go test ./cmd/dcpi -run TestProfileKilledAtRandom
// -kill.reps 500 is the soak (docs/tools.md); -kill.seed repeats a run.
var (
	killReps = flag.Int("kill.reps", 16, "TestProfileKilledAtRandom: runs of dcpi profile to kill")
	killSeed = flag.Uint64("kill.seed", 0, "TestProfileKilledAtRandom: seed (0: from the clock)")
)

var (
	dcpiBinOnce sync.Once
	dcpiBin     string
	dcpiBinErr  error
)

// builtDcpi is the dcpi binary, built once for the tests that need a real
// process (a signal must be real).
func builtDcpi(t *testing.T) string {
	t.Helper()
	dcpiBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dcpi-bin-")
		if err != nil {
			dcpiBinErr = err
			return
		}
		dcpiBin = filepath.Join(dir, "dcpi")
		if out, err := exec.Command("go", "build", "-o", dcpiBin, ".").CombinedOutput(); err != nil {
			dcpiBinErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if dcpiBinErr != nil {
		t.Fatal(dcpiBinErr)
	}
	return dcpiBin
}

// killMode is how a run is ended early.
type killMode int

const (
	killINT    killMode = iota // Ctrl-C
	killTERM                   // kill
	killINTINT                 // Ctrl-C twice: the second forces
	killPIPE                   // the reader of its output goes away (| head)
	numKillModes
)

func (m killMode) String() string {
	return [...]string{"SIGINT", "SIGTERM", "SIGINT twice", "SIGPIPE (closed pipe)"}[m]
}

// TestProfileKilledAtRandom runs dcpi profile into one output again and
// again and ends each run at a random moment (from its start to a little
// after its usual end) with SIGINT, SIGTERM, two SIGINTs or a closed
// output pipe. After every run the output is a whole profile database
// (the old or the new one: it opens and holds samples), so is any .old,
// and no temporary directory is left beside them.
func TestProfileKilledAtRandom(t *testing.T) {
	bin := builtDcpi(t) // before the clock starts
	seed := *killSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-kill.seed to repeat), %d runs", seed, *killReps)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	out := filepath.Join(dir, "p.db")
	args := []string{"profile", "--timing=false", "-o", out, "--", "sort", "3000"}

	begin := time.Now()
	start := time.Now()
	if res := runKilled(t, bin, args, killINT, -1); res.err != nil {
		t.Fatalf("the first run: %v\n%s", res.err, res.out)
	}
	usual := time.Since(start)
	checkProfileOutput(t, dir, out)
	counts := map[string]int{}
	for i := range *killReps {
		mode := killMode(rng.IntN(int(numKillModes)))
		after := time.Duration(rng.Int64N(int64(usual) * 9 / 8))
		res := runKilled(t, bin, args, mode, after)
		counts[res.status]++
		t.Logf("%v after %v of %v: %s", mode, after, usual, res.status)
		if res.err != nil {
			t.Fatalf("run %d, %v after %v: %v\n%s", i+1, mode, after, res.err, res.out)
		}
		if !checkProfileOutput(t, dir, out) {
			t.Fatalf("run %d, %v after %v (%s):\n%s", i+1, mode, after, res.status, res.out)
		}
	}
	t.Logf("ended by: %v; %v after the build", counts, time.Since(begin).Round(time.Millisecond))
}

// killResult is how a killed run ended: its status ("exit N" or "killed
// by S") and output, and err when that status is not one a run may end
// with.
type killResult struct {
	status string
	out    string
	err    error
}

// runKilled runs the binary with args and ends it by mode after the
// given time (never when negative).
func runKilled(t *testing.T, bin string, args []string, mode killMode, after time.Duration) killResult {
	t.Helper()
	cmd := exec.Command(bin, args...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var buf bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&buf, r); close(copied) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if after >= 0 {
		select {
		case err := <-exited:
			exited <- err
		case <-time.After(after):
			switch mode {
			case killINT:
				cmd.Process.Signal(syscall.SIGINT)
			case killTERM:
				cmd.Process.Signal(syscall.SIGTERM)
			case killINTINT:
				cmd.Process.Signal(syscall.SIGINT)
				time.Sleep(time.Millisecond)
				cmd.Process.Signal(syscall.SIGINT)
			case killPIPE:
				r.Close()
			}
		}
	}
	var werr error
	select {
	case werr = <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		return killResult{status: "hung", err: errors.New("still running 30 s after the signal")}
	}
	if mode != killPIPE || after < 0 {
		<-copied
	}
	r.Close()
	res := killResult{status: "exit 0", out: buf.String()}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		ws := ee.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			// Before dcpi profile handles signals: nothing written yet.
			res.status = "killed by " + ws.Signal().String()
		default:
			res.status = "exit " + strconv.Itoa(ws.ExitStatus())
			switch ws.ExitStatus() {
			case 130, 143, 141:
			default:
				res.err = errors.New(res.status)
			}
		}
	} else if werr != nil {
		res.err = werr
	}
	return res
}

// checkProfileOutput requires out, and out.old when there is one, to be
// whole profile databases, and nothing else beside them in dir.
func checkProfileOutput(t *testing.T, dir, out string) bool {
	t.Helper()
	ok := true
	for _, p := range []string{out, out + ".old"} {
		if _, err := os.Stat(p); p != out && errors.Is(err, os.ErrNotExist) {
			continue
		}
		db, err := storage.Open(p, storage.Options{ReadOnly: true})
		if err != nil {
			t.Errorf("%s: %v", p, err)
			ok = false
			continue
		}
		samples, _, _, err := db.Totals(storage.Query{})
		db.Close()
		if err != nil || samples == 0 {
			t.Errorf("%s: %d samples, %v", p, samples, err)
			ok = false
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != filepath.Base(out) && e.Name() != filepath.Base(out)+".old" {
			t.Errorf("left %s beside the database", e.Name())
			ok = false
		}
	}
	return ok
}

// readerSource waits for lines on its standard input after a little work.
const readerSource = `#include <stdio.h>
__attribute__((noinline)) long spin(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * 7) ^ (s >> 3); return s; }
int main(void) {
	char line[256];
	printf("spun %ld\n", spin(100000));
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) printf("got %s", line);
	return 0;
}
`

// TestProfileInterruptWhileReading: Ctrl-C stops a program that waits for
// input that never comes; dcpi profile exits 130, as a shell reports an
// interrupted command, with the profile written.
func TestProfileInterruptWhileReading(t *testing.T) {
	cc, err := exec.LookPath("alpha-linux-gnu-gcc")
	if err != nil {
		t.Skip("no alpha-linux-gnu-gcc")
	}
	bin := builtDcpi(t)
	dir, pdir := t.TempDir(), t.TempDir()
	src, prog := filepath.Join(pdir, "reader.c"), filepath.Join(pdir, "reader")
	if err := os.WriteFile(src, []byte(readerSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O2", "-static", "-mcpu=ev5", "-Wl,--no-relax", src, "-o", prog).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	out := filepath.Join(dir, "p.db")
	cmd := exec.Command(bin, "profile", "--timing=false", "-o", out, "--", prog)
	stdin, err := cmd.StdinPipe() // open, and never written
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 64)
	if n, err := stdout.Read(line); err != nil || !strings.HasPrefix(string(line[:n]), "spun") {
		t.Fatalf("read %q, %v", line[:n], err)
	}
	time.Sleep(50 * time.Millisecond) // into fgets
	cmd.Process.Signal(syscall.SIGINT)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("an interrupt did not stop a program waiting for input")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want status 130\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "profile written to "+out) {
		t.Errorf("no profile written:\n%s", stderr.String())
	}
	checkProfileOutput(t, dir, out)
}
