package storage

import (
	"errors"
	"slices"
	"testing"
	"time"

	"dcpi/wire"
)

func putProcesses(t *testing.T, db *DB, ps ...Process) {
	t.Helper()
	var m Meta
	for i := range ps {
		if err := m.PutProcess(ps[i].Host, &ps[i].ProcessRecord); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CommitMeta(&m); err != nil {
		t.Fatal(err)
	}
}

func proc(host string, pid uint32, epoch uint64, binary string) Process {
	return Process{Host: host, ProcessRecord: wire.ProcessRecord{Version: wire.ProcessVersion, PID: pid, Epoch: epoch, Binary: binary}}
}

func pidsOf(ps []Process) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Host+":"+p.Binary)
	}
	return out
}

// TestProcesses: records come back per host in (host, PID, epoch) order,
// with their labels; a second record of the same (host, PID, epoch)
// replaces the first; a bad record or host is refused at Put.
func TestProcesses(t *testing.T) {
	db, _ := openTest(t)
	a := proc("h1", 7, 2, "/usr/bin/db")
	a.Labels = map[string]string{"role": "primary"}
	putProcesses(t, db, proc("h2", 1, 1, "/bin/sh"), a, proc("h1", 7, 1, "/bin/old"), proc("h10", 3, 1, "/bin/x"), proc("h1", 7, 2, "/usr/bin/db"))
	putProcesses(t, db, a) // the node published it again
	all, err := db.Processes(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pidsOf(all), []string{"h1:/bin/old", "h1:/usr/bin/db", "h10:/bin/x", "h2:/bin/sh"}; !slices.Equal(got, want) {
		t.Errorf("Processes(nil) = %v, want %v", got, want)
	}
	if all[1].Labels["role"] != "primary" {
		t.Errorf("labels %v", all[1].Labels)
	}
	some, err := db.Processes([]string{"h2", "h1", "nosuch"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pidsOf(some), []string{"h1:/bin/old", "h1:/usr/bin/db", "h2:/bin/sh"}; !slices.Equal(got, want) {
		t.Errorf("Processes(h2, h1) = %v, want %v", got, want)
	}
	var m Meta
	bad := proc("h1", 0, 1, "/bin/x")
	if err := m.PutProcess("h1", &bad.ProcessRecord); !errors.Is(err, wire.ErrInvalid) {
		t.Errorf("PID 0: %v", err)
	}
	good := proc("h1", 1, 1, "/bin/x")
	if err := m.PutProcess("", &good.ProcessRecord); err == nil {
		t.Errorf("empty host accepted")
	}
	if m.Len() != 0 {
		t.Errorf("refused records were collected")
	}
}

// TestExpireProcesses: expiry drops a process record first seen in an
// expired epoch unless its process still has samples after the horizon;
// a record whose PID was reused before the horizon goes even if the PID
// has later samples (they are the newer process's); records of epochs
// after the horizon stay.
func TestExpireProcesses(t *testing.T) {
	db, _ := openTest(t)
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for ep := uint64(1); ep <= 4; ep++ {
		st := EpochSealed
		if ep == 4 {
			st = EpochOpen
		}
		if err := db.PutEpoch(Epoch{Number: ep, Start: t0.Add(time.Duration(ep) * time.Hour), End: t0.Add(time.Duration(ep+1) * time.Hour), State: st}); err != nil {
			t.Fatal(err)
		}
	}
	img := key(1)
	samples := func(host string, seq, epoch uint64, pids ...uint32) {
		var es []wire.Entry
		for i, p := range pids {
			es = append(es, wire.Entry{Event: 0, Image: img, Offset: uint64(4 * i), PID: p, Count: 1})
		}
		if _, err := db.ApplyBatch(batch(host, 0, seq, epoch, es, nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	samples("h1", 1, 1, 10, 11, 12, 13)
	samples("h1", 2, 3, 10) // pid 10 lives on past the horizon
	samples("h1", 3, 4, 12) // pid 12 reused in epoch 3: its samples are the new process's
	samples("h2", 1, 3, 11) // another host's pid 11
	putProcesses(t, db,
		proc("h1", 10, 1, "/bin/kept"),   // samples in epoch 3
		proc("h1", 11, 1, "/bin/gone"),   // none after the horizon on h1
		proc("h1", 12, 1, "/bin/reused"), // its PID's next process from epoch 2
		proc("h1", 12, 2, "/bin/new"),    // first seen in epoch 2, expired, samples in 4
		proc("h1", 13, 3, "/bin/late"),   // first seen after the horizon
		proc("h2", 11, 2, "/bin/other"),  // samples in 3
		proc("h2", 14, 1, "/bin/idle"),   // never sampled per process
	)
	res, err := db.ExpireEpochs(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	left, err := db.Processes(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"h1:/bin/kept", "h1:/bin/new", "h1:/bin/late", "h2:/bin/other"}
	if got := pidsOf(left); !slices.Equal(got, want) {
		t.Errorf("after expiring epochs 1-2: %v, want %v", got, want)
	}
	if res.Processes != 3 {
		t.Errorf("ExpireResult.Processes = %d, want 3", res.Processes)
	}
}
