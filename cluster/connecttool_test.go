package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"dcpi/cluster"
	"dcpi/cluster/clustertest"
	"dcpi/config"
	"dcpi/transport/auth"
)

// syncBuffer is a bytes.Buffer the connection's goroutine may write.
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

// TestConnectToolSaysWhatTheServerRefused: a tool connected with the
// query role's credentials that publishes where the role may not is told
// at once, naming the role; one with no credentials the server accepts is
// refused with a message that says so.
func TestConnectToolSaysWhatTheServerRefused(t *testing.T) {
	cl := clustertest.Start(t, clustertest.Options{})
	creds, err := cl.Credentials(auth.Query, "")
	if err != nil {
		t.Fatal(err)
	}
	var warn syncBuffer
	nc, err := cluster.ConnectTool(context.Background(), config.NATS{URLs: []string{cl.URL()}, Creds: creds.File, CA: creds.CA}, auth.Query, "test-tool", &warn)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish("dcpi.coord.cut", nil); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(warn.String(), "refused a request"); {
		if time.Now().After(deadline) {
			t.Fatalf("no warning of the refused publish: %q", warn.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(warn.String(), "the command needs the query role's") {
		t.Errorf("warning %q does not name the role", warn.String())
	}
	// A host's key is not the query role's, and not a key the server
	// knows under another name: an unknown file is refused.
	other := t.TempDir() + "/none.creds"
	if _, err := cluster.ConnectTool(context.Background(), config.NATS{URLs: []string{cl.URL()}, Creds: other, CA: creds.CA}, auth.Query, "test-tool", &warn); err == nil {
		t.Fatal("a missing credentials file connected")
	}
}

// TestConnectToolStopsOnCancel: an interrupt (ctx ending) ends a tool's
// wait for a server that does not answer with an error saying so, rather
// than the wait running out.
func TestConnectToolStopsOnCancel(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = cluster.ConnectTool(ctx, config.NATS{URLs: []string{"nats://" + l.Addr().String()}}, auth.Query, "test-tool", nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want one wrapping context.Canceled", err)
	}
}
