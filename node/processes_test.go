package node

import (
	"errors"
	"maps"
	"testing"
	"time"

	"dcpi/hwsim/alpha"
	"dcpi/wire"
)

// TestProcessBook: a record per process as the loader events reveal it —
// the exec'd path as the binary, the parent's binary and labels at fork,
// labels kept across exec with the new binary's configured ones over
// them, base-name entries under path entries — none for the kernel's
// mapping or a PID whose record would say the same again, and a new one
// for a PID reused after an exit.
func TestProcessBook(t *testing.T) {
	b := newProcessBook(map[string]map[string]string{
		"db":          {"role": "primary", "tier": "data"},
		"/usr/bin/db": {"role": "replica"},
		"sort":        {"job": "nightly"},
	})
	for _, e := range []Event{
		{Kind: EventMap, Base: alpha.KernelBase, Path: "vmunix"},
		{Kind: EventExec, PID: 10, Incarnation: 1, Path: "/usr/bin/db"},
		{Kind: EventMap, PID: 10, Incarnation: 1, Path: "/usr/bin/db", Base: 0x10000},
		{Kind: EventMap, PID: 10, Incarnation: 1, Path: "/lib/libc.so", Base: 0x20000},
		{Kind: EventFork, PID: 11, Incarnation: 2, ParentIncarnation: 1},
		{Kind: EventExec, PID: 11, Incarnation: 3, ParentIncarnation: 2, Path: "/bin/sort"},
		{Kind: EventMap, PID: 12, Incarnation: 4, Path: "/bin/ls", Base: 0x10000}, // first seen at its map
		{Kind: EventExit, PID: 12, Incarnation: 4},
		{Kind: EventExec, PID: 12, Incarnation: 5, Path: "/bin/ls"}, // PID 12 reused
	} {
		b.ProcessEvent(e)
	}
	now := time.Unix(1_700_000_000, 5)
	got := b.take(3, now)
	want := []wire.ProcessRecord{
		{PID: 10, Binary: "/usr/bin/db", Labels: map[string]string{"role": "replica", "tier": "data"}},
		{PID: 11, Binary: "/usr/bin/db", Labels: map[string]string{"role": "replica", "tier": "data"}},
		{PID: 11, Binary: "/bin/sort", Labels: map[string]string{"role": "replica", "tier": "data", "job": "nightly"}},
		{PID: 12, Binary: "/bin/ls"},
		{PID: 12, Binary: "/bin/ls"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for i, r := range got {
		w := want[i]
		if r.PID != w.PID || r.Binary != w.Binary || !maps.Equal(r.Labels, w.Labels) || r.Epoch != 3 || r.Start != now.UnixNano() || r.Version != wire.ProcessVersion {
			t.Errorf("record %d = %+v, want %+v", i, *r, w)
		}
		if err := r.Validate(); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
	}
	if again := b.take(4, now); len(again) != 0 {
		t.Errorf("take again: %+v, want nothing", again)
	}
}

func TestCheckProcessLabels(t *testing.T) {
	if err := CheckProcessLabels(map[string]map[string]string{"db": {"role": "x"}, "/bin/sort": nil}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []map[string]map[string]string{
		{"": {"a": "b"}},
		{"/bin/": {"a": "b"}},
		{"db": {"pid": "1"}},
		{"db": {"1a": "b"}},
	} {
		if err := CheckProcessLabels(bad); !errors.Is(err, ErrProcessLabels) {
			t.Errorf("%v: %v, want ErrProcessLabels", bad, err)
		}
	}
}
