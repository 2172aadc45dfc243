package main

import (
	"bufio"
	"bytes"
	"context"
	"dcpi/profiledb"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The failure test's processes: each role is the dcpi binary run as a
// child process whose stdout and stderr go to one log file per role,
// appended across restarts, so that a SIGKILL is a real crash and the logs
// survive it.

// proc is one role of the cluster: the same command line, started,
// killed and restarted.
type proc struct {
	name    string
	bin     string
	args    []string
	env     []string // added to the test's environment (a later key wins)
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the current incarnation has exited
	err    error         // its exit status, once done is closed
	starts int
}

// startMarker starts each incarnation's part of a log.
const startMarker = "=== dcpi failure test: start #"

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s: start: already running (pid %d)", p.name, p.cmd.Process.Pid)
		}
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // the child holds its own descriptor
	p.starts++
	fmt.Fprintf(f, "%s%d at %s: dcpi %s\n", startMarker, p.starts, time.Now().Format("15:04:05.000"), strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	// Die with the test rather than outlive it (a test timeout, a panic).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// current returns the running incarnation's command and done channel.
func (p *proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.done
}

// running reports whether the current incarnation has not exited.
func (p *proc) running() bool {
	_, done := p.current()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// exitErr is the current incarnation's exit status (nil: exited 0 or
// still running).
func (p *proc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// kill SIGKILLs the current incarnation and waits for it to be gone.
func (p *proc) kill() error {
	cmd, done := p.current()
	if cmd == nil {
		return fmt.Errorf("%s: kill: never started", p.name)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: kill: %w", p.name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s: still running 10 s after SIGKILL", p.name)
	}
}

// signal sends sig to the current incarnation.
func (p *proc) signal(sig syscall.Signal) error {
	cmd, _ := p.current()
	if cmd == nil {
		return fmt.Errorf("%s: %v: never started", p.name, sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: %v: %w", p.name, sig, err)
	}
	return nil
}

// stop asks the current incarnation to exit with SIGTERM and waits up to
// timeout; past it, the process gets SIGKILL and stop returns an error,
// since a role must stop gracefully.
func (p *proc) stop(timeout time.Duration) error {
	cmd, done := p.current()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: SIGTERM: %w", p.name, err)
	}
	cmd.Process.Signal(syscall.SIGCONT) // in case a failed test left it stopped
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("%s: did not exit within %v of SIGTERM (killed)", p.name, timeout)
	}
}

// wait waits up to timeout for the current incarnation to exit on its own
// and returns its exit status.
func (p *proc) wait(timeout time.Duration) error {
	_, done := p.current()
	select {
	case <-done:
		return p.exitErr()
	case <-time.After(timeout):
		return fmt.Errorf("%s: still running after %v", p.name, timeout)
	}
}

// log returns the whole log, every incarnation.
func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// currentLog returns the current incarnation's part of the log.
func (p *proc) currentLog() string {
	s := p.log()
	if i := strings.LastIndex(s, startMarker); i >= 0 {
		return s[i:]
	}
	return s
}

// waitLog waits up to timeout for the current incarnation to log a line
// containing substr; it fails early if the process exits.
func (p *proc) waitLog(substr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if strings.Contains(p.currentLog(), substr) {
			return nil
		}
		if !p.running() {
			return fmt.Errorf("%s exited (%v) before logging %q: %s", p.name, p.exitErr(), substr, lastWords(p.currentLog()))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %q in its log after %v", p.name, substr, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lastWords is what a process that exited said last: its panic, or its
// last line (dcpi's error).
func lastWords(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") {
			return l
		}
	}
	return lines[len(lines)-1]
}

// tail returns the last n lines of the log.
func (p *proc) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.log(), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d earlier lines in %s]", len(lines)-n, p.logPath)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// failureCluster is the set of processes of one failure test run.
type failureCluster struct {
	t     *testing.T
	bin   string
	dir   string
	start time.Time
	url   string

	nats   *proc
	coords []*proc
	aggs   []*proc
	nodes  []*proc
	all    []*proc

	// underIngest says, per fault, whether every node was sampling
	// when it was injected.
	underIngest map[string]bool
	rng         *rand.Rand // the faults' schedule
	hosts       []string   // the nodes' host names
	// progress is the samples the cluster held at the last fault
	// (waitIngest's mark).
	progress uint64
	// nodeBase is, per node, the last batch seq of each CPU the cluster
	// held when its current run began (nil: none, the first run).
	nodeBase  map[*proc][]uint64
	nodeKills map[string]int // node agent kills, per host

	// lab is the partition test's network: each role in a network
	// namespace of its own (partition_net_test.go); nil: every role on
	// loopback.
	lab *netLab
}

// newProc makes a role's process; on the partition test's network
// (c.lab) it runs in the role's own network namespace (ip netns exec,
// which execs dcpi in place: the pid is dcpi's, for signals).
func (c *failureCluster) newProc(name string, args ...string) *proc {
	bin := c.bin
	if c.lab != nil {
		args = append([]string{"netns", "exec", c.lab.join(name).ns, c.bin}, args...)
		bin = c.lab.ipCmd
	}
	p := &proc{name: name, bin: bin, args: args, logPath: filepath.Join(c.dir, "logs", name+".log")}
	c.all = append(c.all, p)
	return p
}

// logf logs a step with the time since the test began.
func (c *failureCluster) logf(format string, args ...any) {
	c.t.Helper()
	c.t.Logf("[%6.1fs] %s", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

// dumpLogs prints the tail of every process's log.
func (c *failureCluster) dumpLogs(lines int) {
	for _, p := range c.all {
		c.t.Logf("----- %s (%s), last %d lines -----\n%s", p.name, p.logPath, lines, p.tail(lines))
	}
}

// stopAll stops every process still running: the roles that read from
// the others first, NATS last.
func (c *failureCluster) stopAll(timeout time.Duration) []error {
	var errs []error
	for _, group := range [][]*proc{c.nodes, c.aggs, c.coords, {c.nats}} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, p := range group {
			if p == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.stop(timeout); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	return errs
}

// run runs a dcpi tool to completion and returns its stdout.
func (c *failureCluster) run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("dcpi %s: %w; stderr: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// totals reads the cluster's storage totals with dcpi totals --json.
func (c *failureCluster) totals(hosts ...string) (profiledb.Totals, error) {
	args := []string{"totals", "--nats", c.url, "--json"}
	for _, h := range hosts {
		args = append(args, "--host", h)
	}
	out, err := c.run(45*time.Second, args...)
	if err != nil {
		return profiledb.Totals{}, err
	}
	var tot profiledb.Totals
	if err := json.Unmarshal([]byte(out), &tot); err != nil {
		return profiledb.Totals{}, fmt.Errorf("dcpi totals --json: %w: %q", err, out)
	}
	return tot, nil
}

// leaderMsg is a coordinator's report of gaining or losing leadership
// (coordinator/replica.go's watchLeadership), the message of a log line.
var leaderMsg = regexp.MustCompile(`^coordinator: (\S+) (is the leader|lost leadership)`)

// slogText is one line of the roles' log (log/slog's text format,
// logging.go): its time and its message, quoted when it has spaces.
var slogText = regexp.MustCompile(`^time=(\S+) level=\S+ msg=("(?:[^"\\]|\\.)*"|\S+)`)

// logMessage returns a log line's time and message (ok false: not a line
// of the roles' logger, e.g. a start marker or a tool's output).
func logMessage(line string) (at time.Time, msg string, ok bool) {
	m := slogText.FindStringSubmatch(line)
	if m == nil {
		return at, "", false
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		return at, "", false
	}
	msg = m[2]
	if strings.HasPrefix(msg, `"`) {
		if msg, err = strconv.Unquote(msg); err != nil {
			return at, "", false
		}
	}
	return at, msg, true
}

// leader is the running replica that most recently reported becoming
// leader and has not reported losing it since, from their logs (no
// command says who leads).
func (c *failureCluster) leader() *proc {
	var best *proc
	var bestAt time.Time
	for _, p := range c.coords {
		if !p.running() {
			continue
		}
		var leads bool
		var at time.Time
		sc := bufio.NewScanner(strings.NewReader(p.currentLog()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			t, msg, ok := logMessage(sc.Text())
			if !ok {
				continue
			}
			m := leaderMsg.FindStringSubmatch(msg)
			if m == nil || m[1] != p.name {
				continue
			}
			leads, at = m[2] == "is the leader", t
		}
		if leads && (best == nil || at.After(bestAt)) {
			best, bestAt = p, at
		}
	}
	return best
}

// waitLeader waits up to timeout for a running replica other than not to
// report leadership.
func (c *failureCluster) waitLeader(not *proc, timeout time.Duration) (*proc, error) {
	deadline := time.Now().Add(timeout)
	for {
		if l := c.leader(); l != nil && l != not {
			return l, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no replica became leader within %v", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freeAddr returns a loopback address with a port the OS just chose and
// released.
func freeAddr(t *testing.T) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	return fmt.Sprintf("127.0.0.1:%d", port), port
}
