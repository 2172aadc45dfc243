package node

import (
	"testing"

	"dcpi/hwsim/alpha"
)

func TestImageMapsFollowForkExecExitAndPIDReuse(t *testing.T) {
	kern := Mapping{Base: alpha.KernelBase, Size: 0x10000, Image: "buildid:kern", Path: "/vmunix"}
	im := mapsWithKernel(kern)
	ev := func(e Event) { im.ProcessEvent(e) }
	// pid 7 execs /bin/a (incarnation 1), forks pid 8 (2), which execs
	// /bin/b (3); pid 7 exits, and pid 7 is reused by a new process that
	// execs /bin/c (incarnation 5).
	ev(Event{Kind: EventExec, PID: 7, Incarnation: 1})
	ev(Event{Kind: EventMap, PID: 7, Incarnation: 1, Base: 0x120000000, Size: 0x10000, ImageID: "a", Path: "/bin/a"})
	ev(Event{Kind: EventFork, PID: 8, Incarnation: 2, ParentIncarnation: 1})
	ev(Event{Kind: EventExec, PID: 8, Incarnation: 3, ParentIncarnation: 2})
	ev(Event{Kind: EventMap, PID: 8, Incarnation: 3, Base: 0x120000000, Size: 0x20000, ImageID: "b", Path: "/bin/b"})
	ev(Event{Kind: EventExit, PID: 7, Incarnation: 1})
	ev(Event{Kind: EventFork, PID: 7, Incarnation: 4, ParentIncarnation: 3})
	ev(Event{Kind: EventExec, PID: 7, Incarnation: 5, ParentIncarnation: 4})
	ev(Event{Kind: EventMap, PID: 7, Incarnation: 5, Base: 0x120000000, Size: 0x8000, ImageID: "c", Path: "/bin/c"})

	for _, tc := range []struct {
		inc   uint32
		pc    uint64
		image string
		off   uint64
		pid   int
		ok    bool
	}{
		{1, 0x120000040, "a", 0x40, 7, true}, // the first pid 7, after it exited
		{2, 0x120000040, "a", 0x40, 8, true}, // the child before its exec: its parent's image
		{3, 0x120018000, "b", 0x18000, 8, true},
		{5, 0x120000040, "c", 0x40, 7, true}, // the reused pid 7
		{5, 0x120009000, "", 0, 7, false},    // beyond /bin/c
		{9, 0x120000040, "", 0, 0, false},    // an incarnation never seen
		{0, alpha.KernelBase + 0x100, "buildid:kern", 0x100, 0, true},
		{3, alpha.KernelBase + 0x20000, "", 0, 0, false},
	} {
		m, off, pid, ok := im.Resolve(tc.inc, tc.pc)
		if ok != tc.ok || m.Image != tc.image || off != tc.off || pid != tc.pid {
			t.Errorf("Resolve(%d, %#x) = %q %#x pid %d %v; want %q %#x pid %d %v", tc.inc, tc.pc, m.Image, off, pid, ok, tc.image, tc.off, tc.pid, tc.ok)
		}
	}
	// Ended incarnations survive one full flush and go at the next.
	im.FlushCompleted()
	if _, _, _, ok := im.Resolve(1, 0x120000040); !ok {
		t.Fatal("incarnation 1 forgotten after one flush: samples taken before its exit may still be in a table")
	}
	im.FlushCompleted()
	if _, _, _, ok := im.Resolve(1, 0x120000040); ok {
		t.Fatal("incarnation 1 still kept after two flushes")
	}
	if _, _, _, ok := im.Resolve(5, 0x120000040); !ok {
		t.Fatal("a live incarnation was forgotten")
	}
}

// mapsWithKernel is an image map that has seen kern mapped at boot, as a
// host's first loader event.
func mapsWithKernel(kern Mapping) *ImageMaps {
	im := NewImageMaps()
	im.ProcessEvent(Event{Kind: EventMap, Base: kern.Base, Size: kern.Size, ImageID: kern.Image, Path: kern.Path})
	return im
}

// TestKernelFromBootEvent: kernel samples resolve only once the kernel's
// map event has arrived, and then in every process.
func TestKernelFromBootEvent(t *testing.T) {
	im := NewImageMaps()
	if _, _, _, ok := im.Resolve(0, alpha.KernelBase+8); ok {
		t.Fatal("a kernel PC resolved before the kernel was mapped")
	}
	kern := Mapping{Base: alpha.KernelBase, Size: 0x100, Image: "buildid:kern", Path: "/vmunix"}
	im.ProcessEvent(Event{Kind: EventMap, Base: kern.Base, Size: kern.Size, ImageID: kern.Image, Path: kern.Path})
	for _, inc := range []uint32{0, 7} {
		if m, off, pid, ok := im.Resolve(inc, alpha.KernelBase+8); !ok || m != kern || off != 8 || pid != 0 {
			t.Errorf("incarnation %d: kernel PC resolved to %+v+%d pid %d ok %v", inc, m, off, pid, ok)
		}
	}
	if _, _, _, ok := im.Resolve(7, alpha.KernelBase+0x100); ok {
		t.Error("a PC past the kernel's end resolved")
	}
	if im.Len() != 0 {
		t.Errorf("the kernel's mapping made %d process entries", im.Len())
	}
}

// TestImageMapsSharedObjects: a library's map event carries its load
// bias; offsets count from the mapping's base, the image's own address of
// that base is Base-Bias, and a new executable mapping replaces one it
// overlaps (a library dlopen'ed where a dlclose'd one was).
func TestImageMapsSharedObjects(t *testing.T) {
	im := NewImageMaps()
	ev := im.ProcessEvent
	ev(Event{Kind: EventExec, PID: 7, Incarnation: 1})
	ev(Event{Kind: EventMap, PID: 7, Incarnation: 1, Base: 0x120000000, Size: 0x10000, ImageID: "a", Path: "/bin/a"})
	ev(Event{Kind: EventMap, PID: 7, Incarnation: 1, Base: 0x20000000000, Size: 0x30000, Bias: 0x20000000000, ImageID: "ld", Path: "/lib/ld-linux.so.2"})
	ev(Event{Kind: EventMap, PID: 7, Incarnation: 1, Base: 0x20000040000, Size: 0x200000, Bias: 0x20000040000, ImageID: "libc", Path: "/lib/libc.so.6.1"})
	m, off, _, ok := im.Resolve(1, 0x200000bc6a8)
	if !ok || m.Image != "libc" || off != 0xbc6a8-0x40000 || m.ImageBase() != 0 {
		t.Fatalf("libc sample: %+v +%#x %v", m, off, ok)
	}
	if m, _, _, _ := im.Resolve(1, 0x120000040); m.ImageBase() != 0x120000000 {
		t.Errorf("the program's image base %#x, want where it was linked", m.ImageBase())
	}
	// dlopen maps another library over the end of libc's range.
	ev(Event{Kind: EventMap, PID: 7, Incarnation: 1, Base: 0x20000200000, Size: 0x10000, Bias: 0x20000200000, ImageID: "libx", Path: "/lib/libx.so"})
	if m, _, _, ok := im.Resolve(1, 0x200000bc6a8); ok && m.Image == "libc" {
		t.Errorf("libc's mapping survived an overlapping map event")
	}
	if m, off, _, ok := im.Resolve(1, 0x20000200010); !ok || m.Image != "libx" || off != 0x10 {
		t.Errorf("libx sample: %+v +%#x %v", m, off, ok)
	}
}
