package oracle

import (
	"io"
	"os"
	"sort"
	"testing"

	"dcpi/analysis/cfg"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
)

// runOracle runs workload name with args on a one-CPU machine with ground
// truth and the oracle attached.
func runOracle(t testing.TB, name string, args ...string) (*Oracle, *alpha.GroundTruth, string) {
	t.Helper()
	data, err := workloads.Binary(name)
	if err != nil {
		t.Fatal(err)
	}
	return runOracleImage(t, name, data, args...)
}

// runOracleImage runs the executable data as /bin/NAME.
func runOracleImage(t testing.TB, name string, data []byte, args ...string) (*Oracle, *alpha.GroundTruth, string) {
	t.Helper()
	c := hwsim.DefaultConfig()
	c.CPUs = 1
	c.Timing = true
	c.GroundTruth = true
	c.Files = map[string][]byte{"/bin/" + name: data}
	c.Stdout, c.Stderr = io.Discard, io.Discard
	m, err := hwsim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	o := New(FilesResolver(c.Files))
	o.Attach(m)
	path := "/bin/" + name
	if _, err := m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"}); err != nil {
		t.Fatal(err)
	}
	if m.Run(200_000_000_000) {
		t.Fatalf("%s did not finish", name)
	}
	o.Finish()
	truth := m.GroundTruth()[path]
	if truth == nil || len(truth.PCs) == 0 {
		t.Fatalf("no ground truth for %s", path)
	}
	return o, truth, path
}

// equalityCase is one workload run for the equality tests.
type equalityCase struct {
	name string
	args []string
	long bool // only with DCPI_ORACLE_LONG=1
}

var equalityCases = []equalityCase{
	{name: "tiny"},
	{name: "recurse", args: []string{"1"}},
	{name: "sort", args: []string{"2000"}},
	{name: "interp", args: []string{"1"}},
	{name: "ccdriver", args: []string{"1"}},
	{name: "hello"},
	{name: "recurse", long: true},
	{name: "sort", long: true},
	{name: "interp", long: true},
	{name: "ccdriver", long: true},
	{name: "strproc", long: true},
	{name: "hashdb", long: true},
}

// TestEquality holds the oracle to hwsim's ground truth: the executions
// implied by its path counts (and partial paths) equal the truth per
// instruction, its taken branches and exits from procedures equal the
// truth's edges, and the CCT's calls per callee equal the executions of
// the callee's entry instructions.
func TestEquality(t *testing.T) {
	long := os.Getenv("DCPI_ORACLE_LONG") != ""
	for _, tc := range equalityCases {
		if tc.long != long {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			o, truth, path := runOracle(t, tc.name, tc.args...)
			checkEquality(t, o, truth, path)
		})
	}
}

func checkEquality(t *testing.T, o *Oracle, truth *alpha.GroundTruth, path string) {
	t.Helper()
	c := o.Counters
	if c.Inconsistent != 0 || c.UnmatchedReturns != 0 || c.UnexpectedResumes != 0 || c.UnresolvedImages != 0 {
		t.Errorf("counters: %+v; notes: %q; resolve errors: %v", c, o.Notes, o.ResolveErrors())
	}
	im := o.Images[path]
	if im == nil {
		t.Fatalf("no oracle image for %s", path)
	}
	// Every procedure the truth saw run must be known to the oracle.
	for pc := range truth.PCs {
		im.procAt(pc)
	}
	imp, err := im.Implied()
	if err != nil {
		t.Fatal(err)
	}

	// Instructions.
	var checked, excluded, bad int
	for pc, pt := range truth.PCs {
		p := im.procAt(pc)
		if p == nil || imp.Clean[p.Entry] == nil {
			excluded++
			continue
		}
		checked++
		if got := imp.Executed[pc]; got != pt.Executed && !isCallPal(im, pc) {
			if bad++; bad <= 10 {
				t.Errorf("%s %#x: implied %d executions, truth %d", p.Name, pc, got, pt.Executed)
			}
		}
	}
	for pc, n := range imp.Executed {
		if truth.PCs[pc] == nil && !isCallPal(im, pc) {
			if bad++; bad <= 10 {
				t.Errorf("%#x: implied %d executions, truth none", pc, n)
			}
		}
	}

	// Edges: every truth transfer out of a clean procedure that is not a
	// call is an implied branch or leave.
	leaves := map[uint64]uint64{}
	var edges int
	for e, n := range truth.Edges {
		p := im.procAt(e.From)
		if p == nil || imp.Clean[p.Entry] == nil || isCall(p.CFG, e.From) {
			continue
		}
		edges++
		if !isBranch(p, e) {
			leaves[e.From] += n
			continue
		}
		if imp.Branches[e] != n {
			if bad++; bad <= 10 {
				t.Errorf("%s edge %#x->%#x: implied %d, truth %d", p.Name, e.From, e.To, imp.Branches[e], n)
			}
		}
	}
	for e, n := range imp.Branches {
		if truth.Edges[e] != n {
			if bad++; bad <= 10 {
				t.Errorf("implied branch %#x->%#x %d, truth %d", e.From, e.To, n, truth.Edges[e])
			}
		}
	}
	for from, n := range imp.Leaves {
		if leaves[from] != n {
			if bad++; bad <= 10 {
				t.Errorf("leaves from %#x: implied %d, truth %d", from, n, leaves[from])
			}
		}
	}
	for from, n := range leaves {
		if imp.Leaves[from] != n {
			if bad++; bad <= 10 {
				t.Errorf("truth leaves from %#x: %d, implied %d", from, n, imp.Leaves[from])
			}
		}
	}

	// Instructions per path: exactly its blocks' lengths per run (fork
	// copies an open path's counts to the child, a restarted system call
	// runs its CALL_PAL again: both only in ccdriver).
	if len(im.Forked) == 0 && c.RestartedSyscalls == 0 {
		for _, p := range imp.Clean {
			for id, s := range p.Paths {
				blocks, _ := p.Numbering.Blocks(id)
				var n uint64
				for _, b := range blocks {
					n += uint64(p.CFG.Blocks[b].Len())
				}
				if s.Instructions != n*s.Count {
					if bad++; bad <= 10 {
						t.Errorf("%s path %d: %d instructions in %d runs of %d", p.Name, id, s.Instructions, s.Count, n)
					}
				}
			}
		}
	}

	// Misses: the CCT's totals are the truth's per-PC events summed.
	var imiss, dmiss, head uint64
	for _, pt := range truth.PCs {
		imiss += pt.Events[alpha.EvIMiss]
		dmiss += pt.Events[alpha.EvDMiss]
		head += pt.HeadCycles
	}
	tot := im.Tree.Totals()
	if tot[mIMiss] != imiss || tot[mDMiss] != dmiss {
		t.Errorf("CCT misses: %d I-cache, %d D-cache; truth %d, %d", tot[mIMiss], tot[mDMiss], imiss, dmiss)
	}
	if d := int64(tot[mCycles]) - int64(head); d*d > int64(head)*int64(head)/10000 {
		t.Errorf("CCT cycles %d, truth head-of-queue cycles %d: more than 1%% apart", tot[mCycles], head)
	}
	t.Logf("cycles: CCT %d, truth head-of-queue %d; I-cache misses %d, D-cache %d", tot[mCycles], head, imiss, dmiss)

	// Calls: every procedure whose entries are reached only by calls,
	// tail calls and jumps from elsewhere (no branch inside it leads back
	// to an entry block).
	byProc := im.Tree.ByProc()
	var callsChecked int
	var branchedEntry []string
	for _, p := range im.SortedProcs() {
		if p.CFG == nil {
			continue
		}
		var entryExec uint64
		reentered := false
		for _, a := range p.CFG.Entries {
			if pt := truth.PCs[a]; pt != nil {
				entryExec += pt.Executed
			}
			b, _ := p.CFG.BlockOf(a)
			for _, e := range p.CFG.Blocks[b].Preds {
				if p.CFG.Edges[e].From != p.CFG.Entry() {
					reentered = true
				}
			}
		}
		if reentered {
			branchedEntry = append(branchedEntry, p.Name)
			continue
		}
		callsChecked++
		var calls uint64
		if m := byProc[p.Entry]; m != nil {
			calls = m[mCalls]
		}
		if calls != entryExec {
			if bad++; bad <= 10 {
				t.Errorf("%s: CCT calls %d, truth entry executions %d", p.Name, calls, entryExec)
			}
		}
	}
	sort.Strings(branchedEntry)
	var unclean []string
	for _, p := range imp.Unclean {
		why := "entered mid-procedure or tracking lost"
		if p.NumberErr != nil {
			why = p.NumberErr.Error()
		}
		unclean = append(unclean, p.Name+" ("+why+")")
	}
	sort.Strings(unclean)
	var paths, unknownProcs int
	for _, p := range im.Procs {
		paths += len(p.Paths)
		if p.Unknown > 0 {
			unknownProcs++
		}
	}
	t.Logf("%s: %d PCs checked, %d excluded (in procedures with unknown paths: %v); %d edges; %d procedures' calls checked, excluded (an entry is a branch target): %v; %d distinct paths, %d partial; counters %+v",
		path, checked, excluded, unclean, edges, callsChecked, branchedEntry, paths, len(im.Partials), c)
	if checked == 0 || callsChecked == 0 {
		t.Errorf("nothing checked")
	}
}

// isBranch reports whether e is a taken branch or jump-table jump inside
// p's graph.
func isBranch(p *Proc, e alpha.Edge) bool {
	b, ok := p.CFG.BlockOf(e.From)
	if !ok {
		return false
	}
	for _, x := range p.CFG.Blocks[b].Succs {
		E := p.CFG.Edges[x]
		if (E.Kind == cfg.Taken || E.Kind == cfg.JumpTable) && E.To != p.CFG.Exit() && p.CFG.Blocks[E.To].Start == e.To {
			return true
		}
	}
	return false
}

// isCallPal reports whether pc holds a CALL_PAL: the ground truth does
// not count one that enters the kernel as executed (docs/groundtruth.md),
// while the path through it did run it.
func isCallPal(im *Image, pc uint64) bool {
	p := im.procAt(pc)
	if p == nil || p.CFG == nil {
		return false
	}
	in, ok := p.CFG.Insn(pc)
	return ok && in.Word>>26 == 0
}
