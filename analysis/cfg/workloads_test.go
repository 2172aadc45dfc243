package cfg

import (
	"testing"

	"dcpi/analysis/cfg/cycleq"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/vmunix"
	"dcpi/workloads"
)

func workloadCode(t testing.TB, name string) *Code {
	t.Helper()
	data, err := workloads.Binary(name)
	if err != nil {
		t.Fatal(err)
	}
	im, err := elfimage.Parse(data, "/bin/"+name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCode(im, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEveryProcedure builds every procedure of every workload and of
// vmunix and checks the invariants; it reports how many have missing
// edges and pins that the programs' own code (not glibc) has none.
func TestEveryProcedure(t *testing.T) {
	codes := map[string]*Code{}
	for _, w := range workloads.All() {
		codes[w.Name] = workloadCode(t, w.Name)
	}
	im, err := elfimage.ParseKernel(vmunix.Image(), vmunix.Path)
	if err != nil {
		t.Fatal(err)
	}
	if codes["vmunix"], err = NewCode(im, Options{}); err != nil {
		t.Fatal(err)
	}
	for name, c := range codes {
		procs, err := c.BuildAll()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		missing, jumps, resolved := 0, 0, 0
		for _, p := range procs {
			checkInvariants(t, c, p)
			if p.MissingEdges {
				missing++
			}
			for _, j := range p.Jumps {
				jumps++
				if j.Resolved {
					resolved++
				}
			}
		}
		t.Logf("%-9s %4d procedures, %3d with missing edges; %3d of %3d jmps resolved", name, len(procs), missing, resolved, jumps)
	}
}

// TestInterpSwitch checks the workload built to exercise indirect jumps:
// run_switch's switch is one table of 105 entries (opcodes 0..0x68) and
// every computed goto of run_threaded goes through a 105-entry table too.
func TestInterpSwitch(t *testing.T) {
	c := workloadCode(t, "interp")
	p, err := c.BuildNamed("run_switch.constprop.0")
	if err != nil {
		t.Fatal(err)
	}
	if p.MissingEdges || len(p.Jumps) != 1 {
		t.Fatalf("run_switch: missing %v, jumps %+v", p.MissingEdges, p.Jumps)
	}
	j := p.Jumps[0]
	if !j.Resolved || j.Entries != 0x69 || len(j.Targets) < 20 {
		t.Errorf("run_switch's jump = %+v, want 105 entries resolved", j)
	}
	for _, tg := range j.Targets {
		b, ok := p.BlockOf(tg)
		if !ok || p.Blocks[b].Start != tg || !p.Blocks[b].Reachable {
			t.Errorf("switch target %#x does not start a reachable block", tg)
		}
	}
	th, err := c.BuildNamed("run_threaded")
	if err != nil {
		t.Fatal(err)
	}
	if th.MissingEdges || len(th.Jumps) < 20 {
		t.Errorf("run_threaded: missing %v, %d jumps", th.MissingEdges, len(th.Jumps))
	}
	for _, j := range th.Jumps {
		if !j.Resolved || j.Entries != 0x69 {
			t.Errorf("run_threaded jump %+v", j)
		}
	}
}

// TestGroundTruthBlocks runs workloads on the simulator and checks the
// graphs against what executed: every executed PC lies in a procedure's
// block; within a block every instruction executed equally often except
// across a call or PAL call (a callee that exits, a fork child starting
// after callsys; the ground truth does not count a CALL_PAL that traps to
// the OS as executed); and no executed block is entered more often than its
// predecessors executed (which a missing jump-table edge would break).
func TestGroundTruthBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	for _, run := range []struct {
		name string
		args []string
	}{{"interp", []string{"1"}}, {"sort", []string{"3000"}}, {"strproc", []string{"100"}}} {
		t.Run(run.name, func(t *testing.T) {
			cfg := hwsim.DefaultConfig()
			cfg.CPUs = 1
			cfg.Timing = true
			cfg.GroundTruth = true
			data, _ := workloads.Binary(run.name)
			cfg.Files = map[string][]byte{"/bin/" + run.name: data}
			m, err := hwsim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Spawn("/bin/"+run.name, append([]string{"/bin/" + run.name}, run.args...), nil); err != nil {
				t.Fatal(err)
			}
			m.Run(0)
			truth := m.GroundTruth()["/bin/"+run.name]
			if truth == nil || len(truth.PCs) == 0 {
				t.Fatal("no ground truth")
			}
			c := workloadCode(t, run.name)
			procs := map[uint64]*Proc{}
			count := func(pc uint64) uint64 {
				if e := truth.PCs[pc]; e != nil {
					return e.Executed
				}
				return 0
			}
			for pc := range truth.PCs {
				r, err := c.At(pc)
				if err != nil {
					t.Errorf("executed pc %#x: %v", pc, err)
					continue
				}
				if procs[r.Start] == nil {
					if procs[r.Start], err = c.Build(r); err != nil {
						t.Fatal(err)
					}
				}
			}
			blocks, bad := 0, 0
			for _, p := range procs {
				for bi := range p.Blocks {
					ins := p.BlockInsns(bi)
					n0 := count(ins[0].PC)
					if n0 == 0 {
						continue
					}
					blocks++
					for k := 1; k < len(ins); k++ {
						prev, cur := ins[k-1], ins[k]
						k0, _ := classify(prev)
						if k0 == ctlCall || prev.Dec.Op == alpha.OpCallPal || cur.Dec.Op == alpha.OpCallPal {
							continue
						}
						if count(cur.PC) != count(prev.PC) {
							bad++
							if bad < 10 {
								t.Errorf("%s: %#x executed %d times, %#x before it %d, in one block", p.Name, cur.PC, count(cur.PC), prev.PC, count(prev.PC))
							}
						}
					}
					if p.MissingEdges {
						continue
					}
					var in uint64
					entered := false
					for _, e := range p.Blocks[bi].Preds {
						from := p.Edges[e].From
						if from == p.Entry() {
							entered = true
							continue
						}
						in += count(p.Blocks[from].End - 4)
					}
					if !entered && n0 > in {
						bad++
						if bad < 10 {
							t.Errorf("%s: block %#x executed %d times, its predecessors only %d", p.Name, p.Blocks[bi].Start, n0, in)
						}
					}
				}
			}
			t.Logf("%s: %d executed blocks in %d procedures checked, %d violations", run.name, blocks, len(procs), bad)
			checkClassesAgainstTruth(t, procs, count)
		})
	}
}

// checkClassesAgainstTruth holds the frequency equivalence classes of
// cycleq (sec. 6.1.2) over these CFGs to what the simulator counted: the
// blocks of one class execute equally often, up to one execution per call
// of the procedure that never returned (the procedures on the stack when
// the program exited: main and the like), so by at most 1 here. Blocks
// that start with a CALL_PAL are left out (the ground truth does not
// count a PAL call that traps to the kernel), as are procedures with
// missing edges (each block is its own class there).
func checkClassesAgainstTruth(t *testing.T, procs map[uint64]*Proc, count func(uint64) uint64) {
	t.Helper()
	classes, shared, bad := 0, 0, 0
	for _, p := range procs {
		g := cycleq.Graph{N: len(p.Blocks) + 2, Entry: p.Entry(), Exit: p.Exit()}
		for _, e := range p.Edges {
			g.Edges = append(g.Edges, cycleq.Edge{From: e.From, To: e.To})
		}
		part, err := cycleq.Classes(g, cycleq.Options{MissingEdges: p.MissingEdges})
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if p.MissingEdges {
			continue
		}
		lo, hi := map[int]uint64{}, map[int]uint64{}
		members := map[int]int{}
		for bi := range p.Blocks {
			ins := p.BlockInsns(bi)
			if ins[0].Dec.Op == alpha.OpCallPal {
				continue
			}
			c, n := part.Node[bi], count(ins[0].PC)
			if members[c] == 0 {
				lo[c], hi[c] = n, n
			}
			lo[c], hi[c] = min(lo[c], n), max(hi[c], n)
			members[c]++
		}
		for c, m := range members {
			classes++
			if m < 2 || hi[c] == 0 {
				continue
			}
			shared++
			if hi[c]-lo[c] > 1 {
				bad++
				if bad < 10 {
					t.Errorf("%s: class %d of %d blocks executed from %d to %d times", p.Name, c, m, lo[c], hi[c])
				}
			}
		}
	}
	if shared == 0 {
		t.Fatal("no class of two or more executed blocks: the check checked nothing")
	}
	t.Logf("frequency equivalence classes: %d, %d of them with several executed blocks, %d violations", classes, shared, bad)
}

// BenchmarkBuildAll builds every procedure of the largest workload image.
func BenchmarkBuildAll(b *testing.B) {
	var big string
	size := 0
	for _, w := range workloads.All() {
		data, _ := workloads.Binary(w.Name)
		if len(data) > size {
			big, size = w.Name, len(data)
		}
	}
	data, _ := workloads.Binary(big)
	im, err := elfimage.Parse(data, big)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := NewCode(im, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.BuildAll(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(im.Symbols)), "symbols")
}
