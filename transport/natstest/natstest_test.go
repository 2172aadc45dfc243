package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/transport/natstest"
)

// TestRestartKeepsPortAndStore: a restarted server answers on the same URL
// with the streams it had, and a client that waited reconnects to it.
func TestRestartKeepsPortAndStore(t *testing.T) {
	s := natstest.StartServer(t, natstest.Options{MaxPayload: 64 << 10})
	url := s.URL()
	nc := natstest.Connect(t, url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if nc.MaxPayload() != 64<<10 {
		t.Errorf("max payload %d, want %d", nc.MaxPayload(), 64<<10)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s.1", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop() // harmless
	if nc.FlushTimeout(200*time.Millisecond) == nil {
		t.Fatal("a stopped server answered")
	}
	s.Restart()
	if s.URL() != url {
		t.Fatalf("restarted at %s, was %s", s.URL(), url)
	}
	for !nc.IsConnected() {
		if ctx.Err() != nil {
			t.Fatal("the client did not reconnect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	st, err := js.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.GetMsg(ctx, 1); err != nil || string(m.Data) != "kept" {
		t.Fatalf("after the restart: %v %v", m, err)
	}
}
