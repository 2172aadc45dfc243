package hwsim_test

import (
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// stepper steps up to n instructions of every interrupted user context.
type stepper struct {
	n       int
	done    uint64
	stopped map[alpha.StepStop]uint64
	kept    *hwsim.Interrupted
}

func (s *stepper) CounterInterrupt(smp hwsim.Sample) uint64 {
	x := smp.Context
	if x == nil {
		return 0
	}
	s.kept = x
	for range s.n {
		before := x.Cycle()
		why := x.Step()
		if why != alpha.StepDone {
			s.stopped[why]++
			break
		}
		if x.Cycle() <= before {
			panic("a step took no time")
		}
		s.done++
	}
	return 0
}

// TestInterruptedStepIsTheProgramsOwnExecution checks that instructions a
// handler steps are executed once, as the program's: with a handler that
// interprets after every interrupt, every PC of the program executes
// exactly as often as without (ground truth), the program exits the same
// way, and the machine counts the stepped instructions.
func TestInterruptedStepIsTheProgramsOwnExecution(t *testing.T) {
	prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
		{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: 2000, PeriodMax: 3000}}, InterruptCycles: 214}
	// Inputs a quarter of the defaults: every loop still runs, stepped
	// after thousands of interrupts.
	for _, tc := range []struct {
		name string
		args []string
	}{{"ptrchase", []string{"16384", "15000"}}, {"sort", []string{"6000"}}} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := func(h hwsim.CounterHandler) (*hwsim.Machine, int) {
				m := profiledMachine(t, 1, prof, h, true)
				p, err := m.Spawn("/bin/"+name, append([]string{"/bin/" + name}, tc.args...), nil)
				if err != nil {
					t.Fatal(err)
				}
				m.Run(0)
				return m, p.ExitStatus()
			}
			plain, plainExit := run(&collector{})
			st := &stepper{n: 8, stopped: map[alpha.StepStop]uint64{}}
			stepped, stepExit := run(st)
			if plainExit != stepExit {
				t.Fatalf("exit %d with stepping, %d without", stepExit, plainExit)
			}
			if st.done == 0 {
				t.Fatal("no instruction stepped")
			}
			if st.kept.Step() == alpha.StepDone {
				t.Fatal("a step was taken after the handler returned")
			}
			if got := stepped.CPUStats()[0].Interpreted; got != st.done {
				t.Fatalf("machine counts %d interpreted instructions, handler stepped %d", got, st.done)
			}
			want, got := plain.GroundTruth()["/bin/"+name], stepped.GroundTruth()["/bin/"+name]
			executed := func(g *alpha.GroundTruth, pc uint64) uint64 {
				if tr := g.PCs[pc]; tr != nil {
					return tr.Executed
				}
				return 0
			}
			for pc := range want.PCs {
				if w, g := executed(want, pc), executed(got, pc); w != g {
					t.Fatalf("pc %#x executed %d times with stepping, %d without", pc, g, w)
				}
			}
			for pc := range got.PCs {
				if w, g := executed(want, pc), executed(got, pc); w != g {
					t.Fatalf("pc %#x executed %d times with stepping, %d without", pc, g, w)
				}
			}
			t.Logf("%s: %d stepped, refused %v; retired %d vs %d", name, st.done, st.stopped,
				stepped.CPUStats()[0].Retired, plain.CPUStats()[0].Retired)
		})
	}
}
