package main

import (
	"bytes"
	"context"
	"dcpi/internal/slogf"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the role's goroutines write while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stampInside is a date and time anywhere in a message.
var stampInside = regexp.MustCompile(`\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}`)

// unusedPort is a TCP port free a moment ago, for a Raft address that must
// be known before the replica starts (its peers list names it).
func unusedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRoleLogsJSONLines runs a coordinator replica (with its embedded NATS
// server) with --log-format json --verbose until it leads, and parses
// every line it logged: each is one JSON object with one time field, and
// the replica's own lines and raft's debug lines are among them.
func TestRoleLogsJSONLines(t *testing.T) {
	raftAddr := fmt.Sprintf("127.0.0.1:%d", unusedPort(t))
	var stderr syncBuffer
	root := newRootCommand()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&stderr)
	root.SetArgs([]string{"coordinator", "--log-format", "json", "--verbose", "--id", "c1",
		"--raft-addr", raftAddr, "--peers", "c1=" + raftAddr, "--nats-port", "0",
		"--data-dir", filepath.Join(t.TempDir(), "c1")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "is the leader") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no leader in 30 s; logged:\n%s", stderr.String())
		}
		select {
		case err := <-done:
			t.Fatalf("coordinator exited: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	log.Printf("a line from the standard logger") // redirected by slog.SetDefault
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	var roleLines, raftLines, stdLines int
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		if strings.Count(line, `"time":`) != 1 {
			t.Errorf("want one time field: %s", line)
		}
		ts, ok := m["time"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); !ok || err != nil {
			t.Errorf("time %v: %v", m["time"], err)
		}
		// The message itself must not start with a second timestamp
		// (as raft's hclog lines once did, inside the role's).
		if msg, _ := m["msg"].(string); stampInside.MatchString(msg) {
			t.Errorf("a timestamp inside the message: %s", line)
		}
		switch {
		case m["component"] == "raft c1":
			raftLines++
		case m["role"] == "coordinator c1":
			roleLines++
		case m["msg"] == "a line from the standard logger":
			stdLines++
		}
	}
	if roleLines < 2 || raftLines < 1 || stdLines != 1 {
		t.Errorf("%d role lines, %d raft lines, %d standard logger lines; logged:\n%s", roleLines, raftLines, stdLines, stderr.String())
	}
}

// TestLogFlags: the default is text at Info; --verbose is Debug; a format
// other than text or json is an error naming the flag.
func TestLogFlags(t *testing.T) {
	var b bytes.Buffer
	l, err := slogf.New(&b, "text", false)
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("hidden")
	l.Info("shown", "k", 1)
	if got := b.String(); strings.Contains(got, "hidden") || !strings.Contains(got, "level=INFO msg=shown k=1") || strings.Count(got, "time=") != 1 {
		t.Errorf("text at Info: %q", got)
	}
	b.Reset()
	l, _ = slogf.New(&b, "json", true)
	l.Debug("debug")
	if !strings.Contains(b.String(), `"level":"DEBUG"`) {
		t.Errorf("json verbose: %q", b.String())
	}
	if _, err := slogf.New(&b, "xml", false); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("xml: %v", err)
	}
	if _, _, err := run(t, "disasm", "--log-format", "yaml", "hello"); err == nil || !strings.Contains(err.Error(), "want text or json") {
		t.Errorf("dcpi disasm --log-format yaml: %v", err)
	}
}
