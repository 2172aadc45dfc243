package auth

import (
	"encoding/json"
	"testing"
	"time"

	"dcpi/coordinator"
	"dcpi/wire"
	"dcpi/wire/coordproto"
)

// TestProcessRecordsConfined: with its own key a host stores its process
// records; the server refuses its records on another host's subject, and
// the coordinator refuses a body on its own subject naming another host,
// so no host can describe another's processes (docs/security.md).
func TestProcessRecordsConfined(t *testing.T) {
	srv := startSecure(t)
	ensureStreams(t, srv)
	startReplica(t, srv)
	admin := coordinator.NewClient(mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Coordinator), nil))
	var v1 violations
	nc1 := hostConn(t, srv, "alpha1", &v1)
	c1 := coordinator.NewClient(nc1)
	ctx := ctxT(t, 30*time.Second)
	rec := &wire.ProcessRecord{Version: wire.ProcessVersion, PID: 7, Epoch: 1, Binary: "/usr/bin/db", Labels: map[string]string{"role": "primary"}}
	if err := c1.PutProcesses(ctx, "alpha1", []*wire.ProcessRecord{rec}); err != nil {
		t.Fatalf("alpha1 storing its own processes: %v", err)
	}

	// On alpha2's subject: refused by the server.
	short := coordinator.NewClient(nc1)
	short.Timeout = 300 * time.Millisecond
	if err := short.PutProcesses(ctxT(t, time.Second), "alpha2", []*wire.ProcessRecord{rec}); err == nil {
		t.Error("alpha1's key stored processes of alpha2")
	}
	v1.wait(t, `Permissions Violation for Publish to "`+coordproto.SubjectProcesses+`.alpha2"`)

	// On its own subject, naming alpha2: refused by the coordinator.
	b, _ := rec.MarshalBinary()
	data, _ := json.Marshal(coordinator.ProcessesRequest{Host: "alpha2", Records: [][]byte{b}})
	m, err := nc1.Request(coordproto.SubjectProcesses+".alpha1", data, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get(coordinator.HeaderErrorCode) == "" {
		t.Error("alpha1's key stored processes of alpha2 on its own subject")
	}

	ps, err := admin.Processes(ctx, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Host != "alpha1" || ps[0].PID != 7 {
		t.Errorf("processes stored: %+v, want alpha1's alone", ps)
	}
	if ps, err := admin.Processes(ctx, []string{"alpha2"}, true); err != nil || len(ps) != 0 {
		t.Errorf("alpha2's processes: %+v %v, want none", ps, err)
	}
}
