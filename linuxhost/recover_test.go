package linuxhost

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"dcpi/node"
)

// eventLog is a loader sink and interrupt handler that keeps what it got.
type eventLog struct {
	events  []node.Event
	samples []node.Sample
}

func (l *eventLog) ProcessEvent(e node.Event) { l.events = append(l.events, e) }
func (l *eventLog) CounterInterrupt(s node.Sample) uint64 {
	l.samples = append(l.samples, s)
	return 0
}

// TestLostRecordsRereadProc: a child whose exec and mmap records the
// kernel lost (only its fork arrived) is read again from /proc at its
// first sample after the loss: a new incarnation with its executable's
// mapping, so its samples land in its own image, not its parent's.
// Without a loss the records are trusted and /proc is not read again.
func TestLostRecordsRereadProc(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	child := exec.Command(sleep, "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	pid := uint32(child.Process.Pid)
	exe, err := os.Readlink(procFile(pid, "exe"))
	if err != nil {
		t.Skipf("cannot read the child's /proc: %v", err)
	}
	text, err := os.ReadFile(procFile(pid, "maps"))
	if err != nil {
		t.Fatal(err)
	}
	var pc uint64
	for _, m := range ParseProcMaps(text) {
		if m.Path == exe {
			pc = m.Start
			break
		}
	}
	if pc == 0 {
		t.Fatalf("no executable mapping of %s in\n%s", exe, text)
	}

	run := func(lose bool) (*eventLog, []node.Event) {
		log := &eventLog{}
		h := &Host{procs: map[uint32]*process{}, byCPU: map[uint32]int{0: 0}, images: NewImages(nil), handler: log, sinks: []node.LoaderSink{log}}
		h.apply(&Record{Kind: KindFork, PID: pid, TID: pid, PPID: uint32(os.Getpid()), PTID: uint32(os.Getpid())})
		before := len(log.events)
		if lose {
			h.apply(&Record{Kind: KindLost, Lost: 7})
		}
		h.apply(&Record{Kind: KindSample, PID: pid, TID: pid, IP: pc})
		h.apply(&Record{Kind: KindSample, PID: pid, TID: pid, IP: pc})
		return log, log.events[before:]
	}

	log, after := run(true)
	if len(after) < 2 || after[0].Kind != node.EventExec || after[0].Path != exe {
		t.Fatalf("after a loss, the child's first sample gave events %+v; want an exec of %s, then its mappings", after, exe)
	}
	inc := after[0].Incarnation
	var mapsExe bool
	for _, e := range after[1:] {
		if e.Kind != node.EventMap || e.Incarnation != inc {
			t.Errorf("event %+v: want only maps of incarnation %d", e, inc)
		}
		if e.Path == exe && e.Base <= pc && pc < e.Base+e.Size {
			mapsExe = true
		}
	}
	if !mapsExe {
		t.Errorf("no mapping of %s covering %#x among %+v", filepath.Base(exe), pc, after)
	}
	for i, s := range log.samples {
		if s.Incarnation != inc {
			t.Errorf("sample %d in incarnation %d, want the reread one %d", i, s.Incarnation, inc)
		}
	}

	log, after = run(false)
	if len(after) != 0 {
		t.Errorf("without a loss, samples made the host read /proc again: %+v", after)
	}
	if log.samples[0].Incarnation != log.events[len(log.events)-1].Incarnation {
		t.Errorf("without a loss the sample is not in the forked incarnation")
	}
}
