package linuxhost

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"dcpi/node"
)

// logRunner runs a host without a node: its samples and loader events
// land in an eventLog.
type logRunner struct{}

func (logRunner) Start() error                                 { return nil }
func (logRunner) Flush()                                       {}
func (logRunner) Finish(idle func()) error                     { idle(); return nil }
func (logRunner) HostDropped(cpu int, reason string, k uint64) {}

// buildFrameless compiles testdata/frameless.c as distributions build:
// -O2 without frame pointers, with .eh_frame (gcc's default) and DWARF.
func buildFrameless(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	bin := filepath.Join(t.TempDir(), "frameless")
	if out, err := exec.Command(gcc, "-O2", "-fomit-frame-pointer", "-g", "testdata/frameless.c", "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// profileFrameless runs bin under a host (userStack bytes of stack per
// sample; 0: the kernel's frame-pointer chain) and returns what the
// host delivered and its counts.
func profileFrameless(t *testing.T, bin string, userStack int) (*eventLog, Counts) {
	t.Helper()
	held, err := StartHeld([]string{bin, "1000000000"}, nil, nil, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{PID: held.PID(), Freq: 999, EnableOnExec: true, UserStack: userStack})
	if err != nil {
		held.Kill()
		t.Fatal(err)
	}
	defer h.Close()
	log := &eventLog{}
	h.StartProfiling(log)
	h.Subscribe(log)
	stop := make(chan struct{})
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	go func() { held.Cmd.Wait(); close(stop) }()
	if err := h.Run(logRunner{}, stop, 0); err != nil {
		t.Fatal(err)
	}
	return log, h.Counts()
}

// chainsThroughLeaf counts the samples whose PC is in leaf, and those of
// them whose chain continues leaf, inner, middle, outer, main in order.
func chainsThroughLeaf(t *testing.T, bin string, log *eventLog) (leafs, whole int) {
	t.Helper()
	facts, err := DescribeELF(bin)
	if err != nil {
		t.Fatal(err)
	}
	var base uint64
	found := false
	for _, e := range log.events {
		if e.Kind == node.EventMap && e.Path == bin {
			base, found = e.Base, true
		}
	}
	if !found {
		t.Fatalf("no mapping of %s among %d events", bin, len(log.events))
	}
	name := func(pc uint64) string {
		off := pc - base + *facts.LinkBase
		for _, s := range facts.Symbols {
			if off >= s.Addr && off < s.Addr+s.Size {
				return s.Name
			}
		}
		return "?"
	}
	want := []string{"leaf", "inner", "middle", "outer", "main"}
	shown := 0
	for _, s := range log.samples {
		if name(s.PC) != "leaf" {
			continue
		}
		leafs++
		var got []string
		for _, pc := range s.Chain {
			got = append(got, name(pc))
		}
		if len(got) >= len(want) && slices.Equal(got[:len(want)], want) {
			whole++
		} else if shown < 3 {
			shown++
			t.Logf("a chain through leaf: %v", got)
		}
	}
	return leafs, whole
}

// TestStacksFromCopies profiles a program built without frame pointers:
// the kernel's frame-pointer chains lose leaf's callers; walked from the
// copied stacks with .eh_frame, at least 90% of leaf's samples have
// them all, in order.
func TestStacksFromCopies(t *testing.T) {
	needPerf(t)
	if _, ok := nativeArch(); !ok {
		t.Skipf("no native walk on %s", runtime.GOARCH)
	}
	bin := buildFrameless(t)

	log, c := profileFrameless(t, bin, DefaultUserStack)
	leafs, whole := chainsThroughLeaf(t, bin, log)
	w := c.Walks
	t.Logf(".eh_frame walks: %d of %d leaf samples with the whole chain; %+v; %.2f µs a walk (%.1f ms compiling tables), %.1f frames, %d ring bytes a sample",
		whole, leafs, w, float64(w.Nanos-w.TableNanos)/1e3/float64(max(w.Walked, 1)), float64(w.TableNanos)/1e6,
		float64(w.Frames)/float64(max(w.Walked, 1)), c.SampleBytes/max(c.Delivered, 1))
	if leafs < 100 {
		t.Fatalf("%d samples in leaf: the program did not run long enough", leafs)
	}
	if whole*10 < leafs*9 {
		t.Errorf("%d of %d chains through leaf have its callers, want 90%%", whole, leafs)
	}
	if w.Walked != c.Delivered || w.TableErrors != 0 {
		t.Errorf("walked %d of %d samples, %d tables failed", w.Walked, c.Delivered, w.TableErrors)
	}

	log, c = profileFrameless(t, bin, 0)
	fpLeafs, fpWhole := chainsThroughLeaf(t, bin, log)
	t.Logf("frame-pointer chains: %d of %d leaf samples with the whole chain, %d ring bytes a sample", fpWhole, fpLeafs, c.SampleBytes/max(c.Delivered, 1))
	if fpLeafs > 0 && fpWhole*2 > fpLeafs {
		t.Errorf("the kernel's frame-pointer chains found leaf's callers %d times of %d: the test program has frame pointers?", fpWhole, fpLeafs)
	}
}

// TestUserStackConfig: a copy size the kernel would refuse is refused
// by New; a ring too small for a few copies gets shorter ones.
func TestUserStackConfig(t *testing.T) {
	if _, ok := nativeArch(); !ok {
		t.Skipf("no native walk on %s", runtime.GOARCH)
	}
	for _, c := range []Config{{UserStack: 100}, {UserStack: -8}, {UserStack: 64 << 10}} {
		c.PID = os.Getpid()
		if h, err := New(c); err == nil {
			h.Close()
			t.Errorf("%+v accepted", c)
		}
	}
	needPerf(t)
	h, err := New(Config{PID: os.Getpid(), UserStack: 16 << 10, RingPages: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.cfg.UserStack != (2*unix.Getpagesize()/4-sampleOverhead)&^7 {
		t.Errorf("copies of %d bytes in a ring of 2 pages", h.cfg.UserStack)
	}
}
