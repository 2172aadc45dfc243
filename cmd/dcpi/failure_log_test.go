package main

import (
	"bytes"
	"dcpi/internal/slogf"
	"strings"
	"testing"
)

// TestFailureLogMessage checks that the failure tests read the roles'
// log lines as the process's logger writes them (logging.go): the leader
// reports and the rejections they look for are messages with spaces and
// quotes inside.
func TestFailureLogMessage(t *testing.T) {
	var buf bytes.Buffer
	l, err := slogf.New(&buf, "text", false)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []string{
		"coordinator: c3 is the leader",
		`aggregator: rejected a message: transport: "dcpi.batch.mallory.02": not a batch subject`,
		"consuming",
	}
	for _, m := range msgs {
		l.Info(m, "role", "coordinator c3")
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != len(msgs) {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	for i, line := range lines {
		at, msg, ok := logMessage(line)
		if !ok || msg != msgs[i] || at.IsZero() {
			t.Errorf("logMessage(%q) = %v, %q, %v; want the message %q", line, at, msg, ok, msgs[i])
		}
	}
	if _, _, ok := logMessage(startMarker + "1 at 09:00:00.000: dcpi node"); ok {
		t.Error("a start marker read as a log line")
	}
	if m := leaderMsg.FindStringSubmatch(msgs[0]); m == nil || m[1] != "c3" || m[2] != "is the leader" {
		t.Errorf("leaderMsg on %q: %q", msgs[0], m)
	}
}
