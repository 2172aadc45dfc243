package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"dcpi/transport/auth"
)

// A cluster as processes: the demo's shape (one NATS server with
// JetStream, a 3-replica coordinator, aggregators) but each role a child
// process of the dcpi binary, so that its CPU time and memory are the
// kernel's figures for that process (/proc/PID/stat and status), not an
// estimate. dcpi loadgen run starts one when it is given no --nats.

// roleProc is one role process.
type roleProc struct {
	name, role string
	cmd        *exec.Cmd
	logPath    string
	done       chan struct{}
}

// Processes is a cluster whose roles are child processes: the started
// roles and the NATS URL.
type Processes struct {
	url   string
	procs []*roleProc
}

// StartProcesses starts NATS, three coordinator replicas and aggs
// aggregators as processes of the dcpi binary bin, with their data and
// logs under dir, and waits until each says it serves. The roles never
// outlive this process.
func StartProcesses(bin, dir string, aggs int) (*Processes, error) {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	c := &Processes{}
	start := func(name, role, ready string, args ...string) error {
		f, err := os.OpenFile(filepath.Join(dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = f, f
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive loadgen
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("loadgen: starting %s: %w", name, err)
		}
		p := &roleProc{name: name, role: role, cmd: cmd, logPath: f.Name(), done: make(chan struct{})}
		go func() { cmd.Wait(); close(p.done) }()
		c.procs = append(c.procs, p)
		return p.waitLog(ready, 2*time.Minute)
	}
	natsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	c.url = fmt.Sprintf("nats://127.0.0.1:%d", natsPort)
	if err := start("nats", "nats", "serving at", "nats-server", "--dir", filepath.Join(dir, "nats"), "--port", strconv.Itoa(natsPort)); err != nil {
		c.Stop()
		return nil, err
	}
	var peers []string
	for i := range 3 {
		p, err := freePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		peers = append(peers, fmt.Sprintf("c%d=127.0.0.1:%d", i+1, p))
	}
	// The replicas' Raft credentials come from the server's key store, as
	// an operator would issue them: TLS by default here too.
	keys, err := auth.OpenExisting(filepath.Join(dir, "nats"))
	if err != nil {
		c.Stop()
		return nil, err
	}
	for i, peer := range peers {
		id := fmt.Sprintf("c%d", i+1)
		cred, err := keys.IssueRaftCredential(id)
		if err != nil {
			c.Stop()
			return nil, err
		}
		if err := start(id, "coordinator", "serving, Raft at", "coordinator", "--nats", c.url, "--id", id, "--raft-tls", cred.File,
			"--raft-addr", strings.TrimPrefix(peer, id+"="), "--data-dir", filepath.Join(dir, id), "--peers", strings.Join(peers, ",")); err != nil {
			c.Stop()
			return nil, err
		}
	}
	for i := range aggs {
		if err := start(fmt.Sprintf("agg%d", i+1), "aggregator", "consuming", "aggregator", "--nats", c.url); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// waitLog waits for the role to log substr; it fails if the role exits.
func (p *roleProc) waitLog(substr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(p.logPath)
		if strings.Contains(string(b), substr) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("loadgen: %s exited before it served (log %s)", p.name, p.logPath)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("loadgen: %s: no %q in its log after %v (log %s)", p.name, substr, timeout, p.logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the roles with SIGTERM, readers first and NATS last.
func (c *Processes) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// ProcUsage is a process's CPU time so far and its peak resident memory.
type ProcUsage struct {
	CPU     time.Duration
	PeakRSS uint64 // bytes (VmHWM)
}

// clockTick is the kernel's USER_HZ, the unit of /proc/PID/stat's times;
// 100 on every Linux architecture Go runs on.
const clockTick = 100

// readUsage reads /proc/PID/stat's utime and stime and status's VmHWM;
// pid "self" is this process.
func readUsage(pid string) (ProcUsage, error) {
	var u ProcUsage
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return u, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return u, errors.New("loadgen: unreadable /proc/" + pid + "/stat")
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 13 {
		return u, errors.New("loadgen: short /proc/" + pid + "/stat")
	}
	// Fields 14 and 15 of the line, utime and stime, are 11 and 12
	// after the command name and state.
	ut, err1 := strconv.ParseUint(fields[11], 10, 64)
	st, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return u, errors.New("loadgen: bad times in /proc/" + pid + "/stat")
	}
	u.CPU = time.Duration(ut+st) * time.Second / clockTick
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return u, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				u.PeakRSS = kb << 10
			}
		}
	}
	return u, nil
}

// URL is the NATS server's.
func (c *Processes) URL() string { return c.url }

// Usage reads every role's usage and this process's own (as "loadgen"),
// by name; a nil Processes has only this process's.
func (c *Processes) Usage() map[string]ProcUsage {
	out := map[string]ProcUsage{}
	if c != nil {
		for _, p := range c.procs {
			if u, err := readUsage(strconv.Itoa(p.cmd.Process.Pid)); err == nil {
				out[p.name] = u
			}
		}
	}
	if u, err := readUsage("self"); err == nil {
		out["loadgen"] = u
	}
	return out
}
