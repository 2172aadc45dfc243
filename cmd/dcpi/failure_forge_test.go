package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
)

// forgerHost is the host token of the subjects the failure test publishes
// bad batches on; no node has that name.
const forgerHost = "mallory"

// badBatch is a message no aggregator may apply, and what its logged
// rejection must say.
type badBatch struct {
	what    string
	subject string
	data    []byte
	// The aggregator's log line "rejected a message: ..." must contain
	// both.
	where, reason string
}

// badBatches builds the failure test's malformed and forged messages.
// The forged one is a well-formed batch of victim's with a large count,
// so that applying it would break victim's conservation.
func badBatches(victim string) ([]badBatch, error) {
	key, err := wire.NewImageKey(wire.KindSHA256, func() []byte { s := sha256.Sum256([]byte("forged image")); return s[:] }())
	if err != nil {
		return nil, err
	}
	forged := &wire.Batch{Version: wire.Version, Host: victim, Epoch: 1, CPU: 0, Seq: 1, Start: 0, End: 1000,
		Entries: []wire.Entry{{Image: key, Offset: 0x120, Event: 0, Count: 100000}}}
	forgedData, err := forged.MarshalBinary()
	if err != nil {
		return nil, err
	}
	own := *forged
	own.Host, own.CPU = forgerHost, 2
	ownData, err := own.MarshalBinary()
	if err != nil {
		return nil, err
	}
	on := func(cpu string) string { return "dcpi.batch." + forgerHost + "." + cpu }
	return []badBatch{
		{what: "forged (host " + victim + " on " + forgerHost + "'s subject)", subject: on("0"), data: forgedData,
			where: "on " + on("0") + ":", reason: transport.ErrForged.Error()},
		{what: "garbage", subject: on("1"), data: []byte("this is not a dcpi sample batch, just bytes on the stream"),
			where: "on " + on("1") + ":", reason: wire.ErrMalformed.Error()},
		{what: "truncated (a valid batch less its last byte)", subject: on("2"), data: ownData[:len(ownData)-1],
			where: "on " + on("2") + ":", reason: wire.ErrMalformed.Error()},
		{what: "non-canonical CPU token in the subject", subject: on("02"), data: ownData,
			where: `"` + on("02") + `"`, reason: transport.ErrSubject.Error()},
	}, nil
}

// adminConnect connects the test's own client to the cluster's NATS
// server with the coordinator role's key, found as every local role finds
// its own (transport/auth): the server refuses a client without one. The
// forged messages below are thus a trusted client's mistakes, which the
// aggregators must still reject; a host's key could not publish on
// another's subject at all (transport/auth's TestHostConfined).
func adminConnect(url, name string) (*nats.Conn, error) {
	c, err := auth.Resolve([]string{url}, "", "", auth.Coordinator, "")
	if err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Name(name)}
	if c.File != "" {
		data, err := os.ReadFile(c.File)
		if err != nil {
			return nil, err
		}
		kp, err := transport.ParseUserSeed(data)
		if err != nil {
			return nil, err
		}
		pub, _ := kp.PublicKey()
		opts = append(opts, nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(transport.InboxPrefix(pub)))
	}
	return nats.Connect(url, opts...)
}

// publishBad publishes the bad messages to the batch stream, waiting for
// JetStream to store each.
func publishBad(url string, bad []badBatch) error {
	nc, err := adminConnect(url, "failure-test-forger")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range bad {
		if _, err := js.Publish(ctx, b.subject, b.data); err != nil {
			return fmt.Errorf("publish %s on %s: %w", b.what, b.subject, err)
		}
	}
	return nil
}

// checkRejected checks that the aggregators logged each bad message's
// rejection with its reason.
func checkRejected(aggLogs string, bad []badBatch) []string {
	var lines []string
	for _, l := range strings.Split(aggLogs, "\n") {
		if _, msg, ok := logMessage(l); ok && strings.Contains(msg, "rejected a message") {
			lines = append(lines, msg)
		}
	}
	var missing []string
	for _, b := range bad {
		found := false
		for _, l := range lines {
			if strings.Contains(l, b.where) && strings.Contains(l, b.reason) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, fmt.Sprintf("no aggregator logged the rejection of the %s message on %s with reason %q", b.what, b.subject, b.reason))
		}
	}
	return missing
}

// streamDrained waits for the batch stream to hold no message and the
// aggregators' consumer to have nothing pending or unacknowledged: every
// batch committed and acked, every bad one terminated.
func streamDrained(url string, timeout time.Duration) error {
	nc, err := adminConnect(url, "failure-test-check")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		state, err := drainState(js)
		if err == nil && state == "" {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("stream %s: %w", transport.StreamName, err)
			}
			return fmt.Errorf("stream %s not drained after %v: %s", transport.StreamName, timeout, state)
		}
		time.Sleep(time.Second)
	}
}

// drainState describes what the stream and the consumer still hold, ""
// if nothing.
func drainState(js jetstream.JetStream) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, transport.StreamName)
	if err != nil {
		return "", err
	}
	si, err := s.Info(ctx)
	if err != nil {
		return "", err
	}
	cons, err := s.Consumer(ctx, transport.DefaultDurable)
	if err != nil {
		return "", err
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return "", err
	}
	if si.State.Msgs == 0 && ci.NumPending == 0 && ci.NumAckPending == 0 {
		return "", nil
	}
	return fmt.Sprintf("stream holds %d messages; consumer: %d pending, %d unacknowledged, %d redelivered",
		si.State.Msgs, ci.NumPending, ci.NumAckPending, ci.NumRedelivered), nil
}
