package coordinator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestRaftLoggerOverSlog: raft's lines reach the slog handler once each,
// with raft's level mapped (Info as Debug), the logger's name and
// key/value pairs as attributes, and the handler's level deciding what is
// enabled.
func TestRaftLoggerOverSlog(t *testing.T) {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})
	l := newRaftLogger(h, "c1")

	l.Info("entering follower state", "follower", "c1")
	l.Debug("debug line")
	if l.IsDebug() || l.IsInfo() || !l.IsWarn() {
		t.Errorf("at slog Info: IsDebug %v IsInfo %v IsWarn %v; want false false true", l.IsDebug(), l.IsInfo(), l.IsWarn())
	}
	if buf.Len() != 0 {
		t.Fatalf("raft's Info and Debug are slog Debug, hidden at Info; got %s", buf.String())
	}
	l.Named("transport").With("peer", "c2").Warn("failed to contact", "error", errors.New("refused"), "odd")
	l.Error("failed to heartbeat", "backoff", hclog.Fmt("%dms", 50))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %d:\n%s", len(lines), buf.String())
	}
	var w, e map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"level": "WARN", "msg": "failed to contact", "component": "raft c1.transport",
		"peer": "c2", "error": "refused", "arg": "odd"} {
		if w[k] != v {
			t.Errorf("warn line %s = %v, want %v (%s)", k, w[k], v, lines[0])
		}
	}
	if e["level"] != "ERROR" || e["backoff"] != "50ms" || e["component"] != "raft c1" {
		t.Errorf("error line: %s", lines[1])
	}

	buf.Reset()
	verbose := newRaftLogger(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), "c1")
	verbose.Info("election won")
	verbose.Trace("trace line")
	if !strings.Contains(buf.String(), `"level":"DEBUG","msg":"election won"`) || strings.Contains(buf.String(), "trace line") {
		t.Errorf("at slog Debug: %s", buf.String())
	}
	if verbose.GetLevel() != hclog.Debug || l.GetLevel() != hclog.Warn {
		t.Errorf("GetLevel: %v at Debug, %v at Info", verbose.GetLevel(), l.GetLevel())
	}
}

// TestRaftHandlerWithoutLogger: with no Logger, raft's Warn lines go to
// the standard logger as text without a time of their own, and its Info
// lines nowhere, as before.
func TestRaftHandlerWithoutLogger(t *testing.T) {
	var got []string
	l := newRaftLogger(logfHandler{logf: func(format string, args ...any) {
		got = append(got, strings.TrimSpace(fmt.Sprintf(format, args...)))
	}}, "c1")
	l.Info("entering follower state")
	l.Warn("heartbeat timeout reached", "last-leader-addr", "127.0.0.1:7002", "id", "", "note", "a b")
	if len(got) != 1 {
		t.Fatalf("got %q", got)
	}
	if want := `raft c1: WARN heartbeat timeout reached last-leader-addr=127.0.0.1:7002 id="" note="a b"`; got[0] != want {
		t.Errorf("line %q", got[0])
	}
}

type stringer struct{}

func (stringer) String() string { return "Node at 127.0.0.1:7001 [Follower]" }

// TestRaftLoggerValues: values print as hclog prints them (String, Error,
// Fmt), never as a JSON dump of raft's structures.
func TestRaftLoggerValues(t *testing.T) {
	var buf bytes.Buffer
	l := newRaftLogger(slog.NewJSONHandler(&buf, nil), "c1")
	l.Warn("state", "follower", stringer{}, "err", errors.New("boom"), "empty", hclog.Format{}, 7, "x")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["follower"] != "Node at 127.0.0.1:7001 [Follower]" || m["err"] != "boom" || !strings.Contains(buf.String(), `"arg":7,"arg":"x"`) {
		t.Errorf("%s", buf.String())
	}
}
