package node

import (
	"fmt"
	"testing"

	"dcpi/hwsim/alpha"
	"dcpi/wire"
)

func TestAttributionToImagesAndUnknown(t *testing.T) {
	k := "buildid:" + "0123456789abcdef0123456789abcdef01234567"
	a := "buildid:" + "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0"
	maps := mapsWithKernel(Mapping{Base: alpha.KernelBase, Size: 0x1000, Image: k, Path: "/vmunix"})
	maps.ProcessEvent(Event{Kind: EventExec, PID: 3, Incarnation: 1})
	maps.ProcessEvent(Event{Kind: EventMap, PID: 3, Incarnation: 1, Base: 0x120000000, Size: 0x1000, ImageID: a, Path: "/bin/a"})
	at := newAttributor(maps, []string{"/bin/a"})
	var fb flatBook
	imgs, err := at.add(&fb, []Entry{
		{PID: 1, PC: 0x120000010, Event: 0, Count: 5},
		{PID: 1, PC: 0x120000010, Event: 0, Count: 2},
		{PID: 1, PC: 0x120000014, Event: 2, Count: 1},
		{PID: 0, PC: alpha.KernelBase + 0x40, Event: 0, Count: 4},
		{PID: 1, PC: 0x130000000, Event: 0, Count: 3}, // outside every image
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 2 {
		t.Fatalf("new images %v, want /bin/a and /vmunix", imgs)
	}
	b := at.batch(&fb, "h", 1, 0, 1, 0, 100, nil)
	if b.Total() != 15 {
		t.Fatalf("batch total %d, want 15", b.Total())
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"/bin/a@0x10/0 pid 3": 7, "/bin/a@0x14/2 pid 3": 1, "/vmunix@0x40/0 pid 0": 4}
	got := map[string]uint64{}
	for _, e := range b.Entries {
		name := "/bin/a"
		if e.Image == wire.MustParseImageKey(k) {
			name = "/vmunix"
		}
		got[fmtEntry(name, e)] = e.Count
	}
	for key, n := range want {
		if got[key] != n {
			t.Errorf("%s: %d, want %d (have %v)", key, got[key], n, got)
		}
	}
	if len(b.Unknown) != 1 || b.Unknown[0].Count != 3 || b.Unknown[0].PID != 3 {
		t.Errorf("unknown %+v, want 3 samples of pid 3", b.Unknown)
	}
	if fb.samples != 0 || len(fb.counts) != 0 {
		t.Error("batch did not reset the accumulator")
	}
}

func fmtEntry(name string, e wire.Entry) string {
	return fmt.Sprintf("%s@%#x/%d pid %d", name, e.Offset, e.Event, e.PID)
}
