package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/coordproto"
)

// TestClusterProcesses: a host's process records go through the log to
// every replica, keyed by the host of the request's subject; a body on
// a's subject naming b is refused and stores nothing; the records read
// back, per host and for all, from any replica; a request with a bad
// record is refused whole.
func TestClusterProcesses(t *testing.T) {
	c := newCluster(t, 3)
	nc := connect(t, c.url)
	cl := NewClient(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rec := func(pid uint32, binary string, labels map[string]string) *wire.ProcessRecord {
		return &wire.ProcessRecord{Version: wire.ProcessVersion, PID: pid, Epoch: 1, Start: 1e18, Binary: binary, Labels: labels}
	}
	if err := cl.PutProcesses(ctx, "a", []*wire.ProcessRecord{rec(10, "/usr/bin/db", map[string]string{"role": "primary"}), rec(11, "/bin/sh", nil)}); err != nil {
		t.Fatal(err)
	}
	if err := cl.PutProcesses(ctx, "b", []*wire.ProcessRecord{rec(10, "/usr/bin/web", nil)}); err != nil {
		t.Fatal(err)
	}

	// b's records on a's subject: refused by the coordinator.
	good, _ := rec(99, "/bin/evil", nil).MarshalBinary()
	data, _ := json.Marshal(ProcessesRequest{Host: "b", Records: [][]byte{good}})
	msg, err := nc.Request(coordproto.SubjectProcesses+".a", data, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := replyError(msg); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), ErrOtherHost.Error()) {
		t.Errorf("b's processes on a's subject: %v, want a refusal naming another host", err)
	}
	// A request with one bad record stores none of them.
	data, _ = json.Marshal(ProcessesRequest{Host: "a", Records: [][]byte{good, good[:len(good)-1]}})
	if msg, err = nc.Request(coordproto.SubjectProcesses+".a", data, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := replyError(msg); !errors.Is(err, ErrBadRequest) {
		t.Errorf("a bad record: %v, want ErrBadRequest", err)
	}

	all, err := cl.Processes(ctx, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range all {
		got = append(got, p.Host+":"+p.Binary)
	}
	if want := []string{"a:/usr/bin/db", "a:/bin/sh", "b:/usr/bin/web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Processes(nil) = %v, want %v", got, want)
	}
	if all[0].Labels["role"] != "primary" {
		t.Errorf("labels: %+v", all[0])
	}
	if bs, err := cl.Processes(ctx, []string{"b"}, true); err != nil || len(bs) != 1 || bs[0].PID != 10 {
		t.Errorf("Processes(b) = %+v %v", bs, err)
	}
	// Every replica holds the same records.
	var first []storage.Process
	waitFor(t, "replicas hold the records", 15*time.Second, func() bool {
		for i, r := range c.reps {
			ps, err := r.DB().Processes(nil)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = ps
			} else if !reflect.DeepEqual(ps, first) || len(ps) != 3 {
				return false
			}
		}
		return true
	})
}
