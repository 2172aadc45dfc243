package simhost_test

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"dcpi/analysis/cct"
	"dcpi/analysis/oracle"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/internal/racedetect"
	"dcpi/node"
	"dcpi/node/unwind"
	"dcpi/wire"
	"dcpi/workloads"
)

// The per-sample validation of the sampled call stacks: the
// workload runs once on hwsim with the oracle (analysis/oracle) following
// its transfers and a counter handler walking every sample's chain as the
// driver's stack side does (node.Driver.SampleStack: unwind.Space.Walk
// from the interrupted registers over the space of the image's compiled
// .eh_frame, up to wire.MaxStackFrames frames). At the interrupt the
// oracle has followed every transfer before the interrupted instruction,
// so its shadow stack is the true chain: the PC, then each activation's
// return address (its call site + 4), innermost first. Every user sample
// also goes through a node.Driver with stacks on, whose handed-over chains
// must be the ones walked here: what is checked is what the driver
// records. The oracle is ground truth for this test; nothing here
// measures like the profiler.

// stackCheck is the handler: it walks each sample with the table walk and,
// for the negative control, with every CFA 8 bytes high (SP+8 at the
// interrupt: each CFA derives from the one before, so every SP-based row
// is off by 8).
type stackCheck struct {
	o         *oracle.Oracle
	im        *elfimage.Image
	space     *unwind.Space
	heur      *unwind.Space // the prologue heuristic alone, for its figures
	acts      []oracle.Activation
	kernel    int // samples in vmunix (the driver records the kernel PC alone)
	idle      int // samples with no process
	lost      int // user samples the oracle followed no stack for
	good      tally
	broken    tally
	heuristic tally
	// sampled is the CCT of the table walk's chains (metric: samples),
	// keyed as the oracle keys its tree.
	sampled *cct.Tree
	// samplesAt counts the user samples per oracle context the sampled
	// chain maps to (nil key: no such context).
	samplesAt  map[*cct.Node]uint64
	outside    uint64 // sampled contexts the oracle's tree does not have
	oracleTree *cct.Tree
	// drv is a driver with stacks on, given every user sample: its
	// chains, drained at the end, must be the ones walked here (walks
	// counts them by chain), so what is checked is what the driver
	// records, without a hook in its hot path.
	drv       *node.Driver
	walks     map[string]uint32
	drvStacks []node.StackSample
}

func chainKey(frames []uint64, truncated bool) string {
	return fmt.Sprintf("%#x %v", frames, truncated)
}

// takeStacks is the daemon's side of a full stack buffer (the CPU is
// this goroutine, stopped in the handler: the IPIs are plain calls).
func (c *stackCheck) takeStacks(seal bool) {
	c.drv.HandOff(seal)
	for ok := true; ok; {
		c.drvStacks, ok = c.drv.TakeFullStacks(c.drvStacks)
	}
	c.drv.Release()
}

// driverStacks drains the driver and returns its chains by key.
func (c *stackCheck) driverStacks() map[string]uint32 {
	c.drv.BeginFlush()
	c.drvStacks = c.drv.DrainStacks(c.drvStacks)
	c.drv.EndFlush()
	c.takeStacks(true)
	out := map[string]uint32{}
	for _, s := range c.drvStacks {
		out[chainKey(s.Frames, s.Truncated)] += s.Count
	}
	return out
}

// tally is one walker's agreement with the oracle.
type tally struct {
	user      int
	whole     int    // the whole chain right
	firstK    [5]int // [k]: the first k frames right (k = 1..4)
	truncated int    // a proper prefix of the true chain, the walk said Truncated
	wrong     int    // a frame differs (or the walk went on past the outermost)
	// flagWrong: every frame right, but Truncated says otherwise (the
	// heuristic cannot step out of _start, whose RA column is r15).
	flagWrong int
	// causes counts the wrong chains by where the failing step started:
	// the class of the frame whose row gave the wrong return address.
	causes map[string]int
	// at counts the samples by the class of the sampled PC, and right
	// those whose whole chain is right.
	at, right map[string]int
	examples  []string
}

func newTally() tally {
	return tally{causes: map[string]int{}, at: map[string]int{}, right: map[string]int{}}
}

func (c *stackCheck) CounterInterrupt(s hwsim.Sample) uint64 {
	switch {
	case s.PID == 0:
		c.idle++
		return 0
	case s.Kernel || s.Mem == nil:
		c.kernel++
		return 0
	}
	img, acts := c.o.Stack(s.PID, c.acts[:0])
	c.acts = acts
	if img == nil || len(acts) == 0 {
		c.lost++
		return 0
	}
	if c.oracleTree == nil {
		c.oracleTree = img.Tree
	}
	want := []uint64{s.PC}
	for _, a := range acts {
		if a.RetAddr == 0 {
			break
		}
		want = append(want, a.RetAddr)
	}
	regs := unwind.Regs{PC: s.PC, SP: s.SP, FP: s.FP, RA: s.RA, T9: s.T9}
	var buf [wire.MaxStackFrames]uint64
	res := c.space.Walk(regs, s.Mem, buf[:])
	got := buf[:res.N]
	c.judge(&c.good, want, got, res.Truncated, s.PC)
	c.walks[chainKey(got, res.Truncated)]++
	ns := node.Sample{CPU: s.CPU, Incarnation: s.Incarnation, PC: s.PC, Event: uint8(s.Event), SP: s.SP, FP: s.FP, RA: s.RA, T9: s.T9, Mem: s.Mem}
	if _, full := c.drv.SampleStack(ns, c.space); full {
		c.takeStacks(false)
	}
	c.count(img, got, res.Truncated)
	res = c.heur.Walk(regs, s.Mem, buf[:])
	c.judge(&c.heuristic, want, buf[:res.N], res.Truncated, s.PC)
	regs.SP += 8
	res = c.space.Walk(regs, s.Mem, buf[:])
	c.judge(&c.broken, want, buf[:res.N], res.Truncated, s.PC)
	return 0
}

// judge compares one walk with the true chain.
func (c *stackCheck) judge(t *tally, want, got []uint64, truncated bool, pc uint64) {
	t.user++
	class := c.pcClass(pc, true)
	t.at[class]++
	capped := want
	if len(capped) > wire.MaxStackFrames {
		capped = capped[:wire.MaxStackFrames]
	}
	if slices.Equal(got, capped) {
		t.whole++
		t.right[class]++
		if truncated != (len(want) > len(capped)) {
			t.flagWrong++
		}
	}
	for k := 1; k <= 4; k++ {
		n := min(k, len(capped))
		if len(got) >= n && slices.Equal(got[:n], capped[:n]) {
			t.firstK[k]++
		}
	}
	i := 0
	for i < len(got) && i < len(capped) && got[i] == capped[i] {
		i++
	}
	switch {
	case i == len(got) && i < len(capped):
		t.truncated++
	case i < len(got) && i > 0:
		t.wrong++
		// Frame i is wrong: the step from frame i-1 (its PC, or its
		// call) read the wrong return address.
		cause := c.pcClass(got[i-1]-boolU(i > 1)*4, i == 1)
		if i >= len(capped) {
			cause = "past the outermost frame: " + cause
		}
		t.causes[cause]++
		if len(t.examples) < 4 {
			sym, off, _ := c.im.Lookup(got[i-1] - boolU(i > 1)*4)
			t.examples = append(t.examples, fmt.Sprintf("frame %d from %s+%#x (%s): got %#x want %#x", i, sym.Name, off, cause, got, capped))
		}
	}
}

// pcClass names where pc lies in its procedure: at its entry, in its
// prologue (before it saved RA), in an epilogue (RA reloaded, the ret
// ahead), in a millicode routine (RA in t9) or a leaf (never saves RA),
// else its body. frame0: pc is the sampled instruction, not yet run.
func (c *stackCheck) pcClass(pc uint64, frame0 bool) string {
	sym, off, ok := c.im.Lookup(pc)
	if !ok {
		return "outside every procedure"
	}
	if strings.HasPrefix(sym.Name, "__div") || strings.HasPrefix(sym.Name, "__rem") {
		return "millicode"
	}
	if !frame0 {
		return "body"
	}
	if off == 0 {
		return "entry"
	}
	saves := false
	for a := sym.Addr; a < sym.Addr+sym.Size && a < sym.Addr+64; a += 4 {
		w, ok := insnAt(c.im, a)
		if !ok {
			break
		}
		if w>>26 == 0x2d && w>>21&31 == unwind.RegRA && w>>16&31 == unwind.RegSP {
			saves = true
			if pc <= a {
				return "prologue"
			}
			break
		}
	}
	if !saves {
		return "leaf"
	}
	// An epilogue: the RA reloaded (ldq ra,K(sp)) and a ret ahead.
	for a := pc - 4; a >= sym.Addr && a+16 >= pc; a -= 4 {
		w, ok := insnAt(c.im, a)
		if !ok {
			break
		}
		if w>>26 == 0x29 && w>>21&31 == unwind.RegRA && w>>16&31 == unwind.RegSP {
			return "epilogue"
		}
	}
	return "body"
}

func insnAt(im *elfimage.Image, addr uint64) (uint32, bool) {
	seg, ok := im.SegmentFor(addr)
	if !ok || addr-seg.Vaddr+4 > uint64(len(seg.Data)) {
		return 0, false
	}
	d := seg.Data[addr-seg.Vaddr:]
	return uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16 | uint32(d[3])<<24, true
}

// count adds the table walk's chain to the sampled CCT, keyed as the
// oracle keys its records (a procedure's entry, the call site in the
// caller), and to the oracle context it names.
func (c *stackCheck) count(img *oracle.Image, chain []uint64, truncated bool) {
	procOf := func(addr uint64) uint64 {
		r, err := img.Code.At(addr)
		if err != nil {
			return addr
		}
		return r.Start
	}
	node := c.sampled.Root
	ora := img.Tree.Root
	if truncated {
		// A chain cut short has no root: its contexts are its own.
		node = c.sampled.Child(node, 0, 0)
		ora = nil
	}
	for i := len(chain) - 1; i >= 0; i-- {
		pc, site := chain[i], uint64(0)
		if i > 0 {
			pc = chain[i] - 4
		}
		if i+1 < len(chain) {
			site = chain[i+1] - 4
		}
		proc := procOf(pc)
		node = c.sampled.Child(node, proc, site)
		if ora != nil {
			ora = lookupContext(img.Tree, ora, proc, site)
		}
	}
	node.Metrics[0]++
	if ora == nil {
		c.outside++
		return
	}
	c.samplesAt[ora]++
}

// lookupContext is cct.Tree.Child without creating: parent's child
// (proc, site), or the ancestor of proc a recursive call folds into; nil
// when the tree has neither.
func lookupContext(t *cct.Tree, parent *cct.Node, proc, site uint64) *cct.Node {
	if n := parent.Lookup(cct.Key{Proc: proc, CallSite: site}); n != nil {
		return n
	}
	for a := parent; a != nil && a != t.Root; a = a.Parent {
		if a.Proc == proc {
			return a
		}
	}
	return nil
}

// stackWorkload runs name with the oracle and the checker attached.
func stackWorkload(t *testing.T, name string, args []string) *stackCheck {
	t.Helper()
	im, space, heur := spaces(t, name)
	data, err := workloads.Binary(name)
	if err != nil {
		t.Fatal(err)
	}
	path := "/bin/" + name
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = 1
	cfg.Timing = true
	cfg.Files = map[string][]byte{path: data}
	cfg.Stdout, cfg.Stderr = io.Discard, io.Discard
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := oracle.New(oracle.FilesResolver(cfg.Files))
	o.Attach(m)
	c := &stackCheck{o: o, im: im, space: space, heur: heur, good: newTally(), broken: newTally(), heuristic: newTally(),
		sampled: cct.New("samples"), samplesAt: map[*cct.Node]uint64{}, walks: map[string]uint32{}}
	dc := node.DefaultDriverConfig()
	dc.Stacks = node.DefaultStackConfig()
	if c.drv, err = node.NewDriver(dc); err != nil {
		t.Fatal(err)
	}
	// Cycles alone, and an interrupt that costs nothing: the oracle
	// charges the cycles between transfers to the top activation, and
	// the handler's would land on the sampled contexts.
	prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: 6000, PeriodMax: 6400}}}
	if err := m.StartProfiling(prof, c); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"}); err != nil {
		t.Fatal(err)
	}
	if m.Run(200_000_000_000) {
		t.Fatalf("%s did not finish", name)
	}
	o.Finish()
	if got := c.driverStacks(); !maps.Equal(got, c.walks) {
		t.Fatalf("the driver recorded %d distinct chains, the walks here %d: not the same", len(got), len(c.walks))
	}
	if st := c.drv.Stats(); st.StackDropped != 0 {
		t.Fatalf("the driver dropped %d stacks", st.StackDropped)
	}
	if o.Counters.Inconsistent != 0 || o.Counters.UnmatchedReturns != 0 || o.Counters.UnexpectedResumes != 0 {
		t.Fatalf("the oracle lost track: %+v %q", o.Counters, o.Notes)
	}
	return c
}

// agreement compares the sampled contexts with the oracle's cycles per
// context: the share of user samples in a context the oracle has, and,
// over every context with samples or cycles, the Pearson correlation and
// the total variation distance between the sampled share and the cycle
// share.
type agreement struct {
	inOracle, corr, tvd float64
	contexts            int
}

func (c *stackCheck) agreement() agreement {
	var a agreement
	user := float64(c.good.user)
	if user == 0 || c.oracleTree == nil {
		return a
	}
	cyc := c.oracleTree.Metric(oracle.MetricCycles)
	var total float64
	c.oracleTree.Walk(func(n *cct.Node) { total += float64(n.Metrics[cyc]) })
	var ps, qs []float64
	c.oracleTree.Walk(func(n *cct.Node) {
		if n.Metrics[cyc] == 0 && c.samplesAt[n] == 0 {
			return
		}
		ps = append(ps, float64(c.samplesAt[n])/user)
		qs = append(qs, float64(n.Metrics[cyc])/total)
	})
	// Sampled contexts the oracle does not have: all sampled share.
	ps = append(ps, float64(c.outside)/user)
	qs = append(qs, 0)
	a.inOracle = 1 - float64(c.outside)/user
	a.contexts = len(ps) - 1
	var sp, sq float64
	for i := range ps {
		a.tvd += math.Abs(ps[i]-qs[i]) / 2
		sp += ps[i]
		sq += qs[i]
	}
	mp, mq := sp/float64(len(ps)), sq/float64(len(qs))
	var cov, vp, vq float64
	for i := range ps {
		cov += (ps[i] - mp) * (qs[i] - mq)
		vp += (ps[i] - mp) * (ps[i] - mp)
		vq += (qs[i] - mq) * (qs[i] - mq)
	}
	if vp > 0 && vq > 0 {
		a.corr = cov / math.Sqrt(vp*vq)
	}
	return a
}

func pct(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return 100 * float64(n) / float64(d)
}

func (t *tally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d user samples: whole chain right %.1f%%, first k right %.1f/%.1f/%.1f/%.1f%% (k=1..4), truncated %.1f%%, wrong %.1f%%, all frames right but Truncated wrong %.1f%%",
		t.user, pct(t.whole, t.user), pct(t.firstK[1], t.user), pct(t.firstK[2], t.user), pct(t.firstK[3], t.user), pct(t.firstK[4], t.user),
		pct(t.truncated, t.user), pct(t.wrong, t.user), pct(t.flagWrong, t.user))
	classes := make([]string, 0, len(t.at))
	for k := range t.at {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	b.WriteString("; by sampled PC:")
	for _, k := range classes {
		fmt.Fprintf(&b, " %s %d (%.1f%% right)", k, t.at[k], pct(t.right[k], t.at[k]))
	}
	if len(t.causes) > 0 {
		causes := make([]string, 0, len(t.causes))
		for k := range t.causes {
			causes = append(causes, k)
		}
		sort.Slice(causes, func(i, j int) bool { return t.causes[causes[i]] > t.causes[causes[j]] })
		b.WriteString("; first wrong frame's step from:")
		for _, k := range causes {
			fmt.Fprintf(&b, " %s %d", k, t.causes[k])
		}
	}
	return b.String()
}

// TestStacksAgainstOracle holds every sample's walked chain to the
// oracle's shadow stack at the interrupt, per workload, and the sampled
// CCT to the oracle's cycles per context. The floors sit a little below
// what was measured (docs/node.md, "Call stacks"); the same walk with
// every CFA 8 bytes off must fall below them.
func TestStacksAgainstOracle(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("one goroutine's simulation checked against the oracle: nothing for the race detector, and slow under it")
	}
	if testing.Short() {
		t.Skip("runs six workloads with the oracle")
	}
	for _, w := range []struct {
		name  string
		args  []string
		whole float64 // floor of the whole-chain share
		in    float64 // floor of the share of samples in an oracle context
		tvd   float64 // ceiling of the total variation distance
	}{
		{"recurse", []string{"1"}, 0.99, 0.99, 0.06},
		{"sort", []string{"25000"}, 0.99, 0.99, 0.06},
		{"interp", []string{"1"}, 0.99, 0.99, 0.06},
		{"ccdriver", []string{"5"}, 0.99, 0.99, 0.06},
		{"hashdb", []string{"20000", "120000"}, 0.99, 0.99, 0.06},
		{"server", []string{"3000"}, 0.99, 0.99, 0.06},
	} {
		t.Run(w.name, func(t *testing.T) {
			c := stackWorkload(t, w.name, w.args)
			g, b := &c.good, &c.broken
			if g.user < 200 {
				t.Fatalf("only %d user samples", g.user)
			}
			a := c.agreement()
			t.Logf("%s: %d samples in vmunix (kernel PC only), %d idle, %d the oracle had no stack for", w.name, c.kernel, c.idle, c.lost)
			t.Logf("table walk: %s", g)
			t.Logf("CFA+8 walk: %s", b)
			t.Logf("heuristic alone: %s", &c.heuristic)
			for _, e := range c.heuristic.examples {
				t.Logf("heuristic wrong: %s", e)
			}
			t.Logf("sampled CCT: %.1f%% of user samples in a context the oracle has; over %d contexts, sampled share vs. oracle cycle share: correlation %.4f, total variation distance %.4f",
				100*a.inOracle, a.contexts, a.corr, a.tvd)
			for _, e := range g.examples {
				t.Logf("wrong: %s", e)
			}
			if f := float64(g.whole) / float64(g.user); f < w.whole {
				t.Errorf("whole chain right on %.1f%% of samples, floor %.0f%%", 100*f, 100*w.whole)
			}
			if g.flagWrong != 0 {
				t.Errorf("%d right chains with the wrong Truncated flag", g.flagWrong)
			}
			if f := float64(b.whole) / float64(b.user); f >= w.whole {
				t.Errorf("a walk with every CFA off by 8 passes the floor: %.1f%% whole", 100*f)
			}
			if a.inOracle < w.in {
				t.Errorf("%.1f%% of samples in an oracle context, floor %.0f%%", 100*a.inOracle, 100*w.in)
			}
			if a.tvd > w.tvd {
				t.Errorf("total variation distance %.4f, ceiling %.2f", a.tvd, w.tvd)
			}
		})
	}
}
