package oracle

import (
	"io"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
)

// stackProbe checks the oracle's shadow stack at every user-mode counter
// interrupt.
type stackProbe struct {
	t       *testing.T
	o       *Oracle
	start   uint64 // _start's entry
	checked int
	acts    []Activation
}

func (p *stackProbe) CounterInterrupt(s hwsim.Sample) uint64 {
	if s.Kernel || s.Mem == nil || s.PID == 0 {
		return 0
	}
	im, acts := p.o.Stack(s.PID, p.acts[:0])
	p.acts = acts
	if im == nil || len(acts) == 0 {
		p.t.Errorf("pc %#x: no stack for pid %d", s.PC, s.PID)
		return 0
	}
	p.checked++
	// Innermost first: the sampled PC is in the first activation's
	// procedure, the last is _start's, which nothing called.
	if r, err := im.Code.At(s.PC); err != nil || r.Start != acts[0].Proc {
		p.t.Errorf("pc %#x: innermost activation %#x, want the procedure holding the PC (%v)", s.PC, acts[0].Proc, err)
	}
	last := acts[len(acts)-1]
	if last.Proc != p.start || last.CallSite != 0 || last.RetAddr != 0 || last.Context.Parent != im.Tree.Root {
		p.t.Errorf("pc %#x: outermost activation %+v, want _start's at the root", s.PC, last)
	}
	for i, a := range acts[:len(acts)-1] {
		caller := acts[i+1]
		if a.RetAddr != a.CallSite+4 || a.Context == nil {
			p.t.Errorf("pc %#x: activation %d: %+v", s.PC, i, a)
		}
		// The call site lies in the caller's procedure.
		if r, err := im.Code.At(a.CallSite); err != nil || r.Start != caller.Proc {
			p.t.Errorf("pc %#x: activation %d called from %#x, not in its caller %#x", s.PC, i, a.CallSite, caller.Proc)
		}
	}
	return 0
}

// TestStack reads the shadow stack from a counter handler on the same
// run, as a sampled call stack would be checked against it.
func TestStack(t *testing.T) {
	data, err := workloads.Binary("recurse")
	if err != nil {
		t.Fatal(err)
	}
	c := hwsim.DefaultConfig()
	c.CPUs = 1
	c.Files = map[string][]byte{"/bin/recurse": data}
	c.Stdout, c.Stderr = io.Discard, io.Discard
	m, err := hwsim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	o := New(FilesResolver(c.Files))
	o.Attach(m)
	if im, acts := o.Stack(1, nil); im != nil || acts != nil {
		t.Fatalf("a stack before any process: %v", acts)
	}
	code, _, err := FilesResolver(c.Files)("/bin/recurse")
	if err != nil {
		t.Fatal(err)
	}
	start, err := code.Lookup("_start")
	if err != nil {
		t.Fatal(err)
	}
	p := &stackProbe{t: t, o: o, start: start.Start}
	prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: 20000, PeriodMax: 21000}}}
	if err := m.StartProfiling(prof, p); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn("/bin/recurse", []string{"/bin/recurse", "1"}, nil); err != nil {
		t.Fatal(err)
	}
	if m.Run(200_000_000_000) {
		t.Fatal("recurse did not finish")
	}
	if p.checked < 100 {
		t.Fatalf("only %d samples checked", p.checked)
	}
	o.Finish()
	if im, _ := o.Stack(1, nil); im != nil {
		t.Error("a stack after the process exited")
	}
}
