package instrument

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
)

// appendFiles is an in-memory file system for hwsim.Config.OpenAppend.
type appendFiles struct {
	mu    sync.Mutex
	files map[string]*bytes.Buffer
}

type lockedWriter struct {
	fs *appendFiles
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	return w.b.Write(p)
}

func (fs *appendFiles) open(path string) (io.Writer, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	b := fs.files[path]
	if b == nil {
		b = &bytes.Buffer{}
		fs.files[path] = b
	}
	return lockedWriter{fs, b}, nil
}

// simRun runs image as /bin/name on a one-CPU machine with ground truth,
// returning stdout, stderr, the truth of the image and the files written.
func simRun(t *testing.T, name string, image []byte, args []string) (stdout, stderr []byte, truth *alpha.GroundTruth, cycles uint64, files map[string]*bytes.Buffer) {
	t.Helper()
	return simRunOn(t, false, name, image, args, nil)
}

// simRunHook is simRun with hook called on the machine (and its files)
// before the run, and done after it.
func simRunHook(t *testing.T, name string, image []byte, args []string, hook func(m *hwsim.Machine, files map[string][]byte) (done func())) (stdout, stderr []byte, truth *alpha.GroundTruth, cycles uint64, files map[string]*bytes.Buffer) {
	t.Helper()
	return simRunOn(t, false, name, image, args, hook)
}

// simRunTimed is simRun on the 21164's timing model, whose ground truth
// counts the events (misses) the metrics' checks compare and the
// executions of every instruction (functional runs keep none).
func simRunTimed(t *testing.T, name string, image []byte, args []string) (stdout, stderr []byte, truth *alpha.GroundTruth, cycles uint64, files map[string]*bytes.Buffer) {
	t.Helper()
	return simRunOn(t, true, name, image, args, nil)
}

// simRunOn runs image as /bin/name on a one-CPU machine with ground truth,
// timed or functional: the counts, edges, paths and calling contexts the
// modes are held to are the same either way, and functional runs take a
// fraction of the time (cycles are then the functional model's).
func simRunOn(t *testing.T, timing bool, name string, image []byte, args []string, hook func(m *hwsim.Machine, files map[string][]byte) (done func())) (stdout, stderr []byte, truth *alpha.GroundTruth, cycles uint64, files map[string]*bytes.Buffer) {
	t.Helper()
	path := "/bin/" + name
	c := hwsim.DefaultConfig()
	c.CPUs = 1
	c.Timing = timing
	c.GroundTruth = true
	files0 := map[string][]byte{}
	for _, w := range workloads.All() {
		b, err := workloads.Binary(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		files0["/bin/"+w.Name] = b
	}
	files0[path] = image
	c.Files = files0
	var so, se bytes.Buffer
	c.Stdout, c.Stderr = &so, &se
	fs := &appendFiles{files: map[string]*bytes.Buffer{}}
	c.OpenAppend = fs.open
	m, err := hwsim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	var done func()
	if hook != nil {
		done = hook(m, files0)
	}
	if _, err := m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"}); err != nil {
		t.Fatal(err)
	}
	if m.Run(200_000_000_000) {
		t.Fatalf("%s did not finish", name)
	}
	if done != nil {
		done()
	}
	cycles = m.Now()
	if f := m.Faults(); len(f) > 0 {
		t.Fatalf("%s faulted: %v", name, f)
	}
	return so.Bytes(), se.Bytes(), m.GroundTruth()[path], cycles, fs.files
}

// pixieCases are the workloads the pixie test runs, with small arguments:
// interp has jump tables, ccdriver forks and execs itself, recurse calls
// deeply, sort and hashdb branch on data.
var pixieCases = []struct {
	name string
	args []string
}{
	{"hello", nil},
	{"recurse", []string{"1"}},
	{"interp", []string{"1"}},
	{"ccdriver", []string{"1"}},
	{"sort", []string{"2000"}},
}

// TestPixieCountsEqualGroundTruth instruments workloads, runs them on hwsim
// and checks that the output is the original's and that every counted
// block and edge equals hwsim's ground truth of the uninstrumented run.
func TestPixieCountsEqualGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads with ground truth")
	}
	for _, tc := range pixieCases {
		t.Run(tc.name, func(t *testing.T) {
			skipLongOracle(t, tc.name, "interp")
			orig, res := instrumentWorkload(t, tc.name, ModePixie)
			wantOut, wantErr, truth, origCycles, _ := simRunTimed(t, tc.name, orig, tc.args)
			gotOut, gotErr, _, instCycles, files := simRun(t, tc.name, res.ELF, tc.args)
			if !bytes.Equal(gotOut, wantOut) || !bytes.Equal(gotErr, wantErr) {
				t.Fatalf("instrumented output differs:\n got %q / %q\nwant %q / %q", gotOut, gotErr, wantOut, wantErr)
			}
			dump := files["pp.out"]
			if dump == nil {
				t.Fatalf("no dump written (files: %v)", files)
			}
			counts, err := ReadCounts(res.ELF, dump.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstTruth(t, counts, truth)
			t.Logf("%s: %d records, %d counters, %d trampolines (%d spills); cycles %d -> %d (%.2fx)",
				tc.name, counts.Records, res.Manifest.Counters, res.Manifest.Trampolines, res.Manifest.Spills,
				origCycles, instCycles, float64(instCycles)/float64(origCycles))
		})
	}
}

func executed(truth *alpha.GroundTruth, pc uint64) uint64 {
	if e := truth.PCs[pc]; e != nil {
		return e.Executed
	}
	return 0
}

func checkAgainstTruth(t *testing.T, c *Counts, truth *alpha.GroundTruth) {
	t.Helper()
	var blocks, edges, nonzero, bad int
	report := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, p := range c.Manifest.Procs {
		if strings.HasPrefix(p.Name, "_dlfo_") {
			// glibc's _dl_find_object start-up sorts the program's PT_LOAD
			// segments; the instrumented image has one more, so these
			// procedures really run differently (docs/instrument.md).
			continue
		}
		for _, b := range p.Blocks {
			if b.Counter < 0 {
				continue
			}
			blocks++
			got, want := c.Blocks[b.Start], executed(truth, b.Start)
			if got != want {
				report("%s block %#x: counted %d, ground truth %d", p.Name, b.Start, got, want)
			}
			if got > 0 {
				nonzero++
			}
		}
		for _, br := range p.Branches {
			edges += 2
			taken, fall := c.Edges[Edge{br.PC, br.Target}], c.Edges[Edge{br.PC, br.PC + 4}]
			if br.Target == br.PC+4 {
				if got, want := taken, executed(truth, br.PC); got != want {
					report("%s branch to next %#x: counted %d, ground truth %d", p.Name, br.PC, got, want)
				}
				continue
			}
			wantTaken := truth.Edges[alpha.Edge{From: br.PC, To: br.Target}]
			wantFall := executed(truth, br.PC) - wantTaken
			if taken != wantTaken || fall != wantFall {
				report("%s branch %#x: counted taken %d fall %d, ground truth %d / %d", p.Name, br.PC, taken, fall, wantTaken, wantFall)
			}
		}
		for _, j := range p.Jumps {
			var transfers uint64
			for _, to := range j.Targets {
				transfers += truth.Edges[alpha.Edge{From: j.PC, To: to}]
			}
			for _, to := range j.Targets {
				edges++
				want := truth.Edges[alpha.Edge{From: j.PC, To: to}]
				if to == j.PC+4 { // not a transfer to the truth: the jump's other executions
					want = executed(truth, j.PC) - transfers
				}
				if got := c.Edges[Edge{j.PC, to}]; got != want {
					report("%s jump %#x -> %#x: counted %d, ground truth %d", p.Name, j.PC, to, got, want)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d counts differ from ground truth", bad)
	}
	if nonzero < 50 {
		t.Errorf("only %d blocks counted as executed: the counters are not working", nonzero)
	}
	t.Logf("%d blocks (%d executed) and %d edges equal ground truth", blocks, nonzero, edges)
}

// skipLongOracle skips workload name, one of long, unless DCPI_ORACLE_ALL
// is set: those workloads take most of the package's time against the
// oracle (interp about 75 s of TestCCTPathsEqualOracle on a loaded
// 2-core machine, recurse 30 s), and CI keeps the others (tiny, sort,
// ccdriver) plus recurse where a test is about recursion. The qemu tests
// still run every workload's instrumented output against the real
// machine's. DCPI_ORACLE_ALL=1 go test ./analysis/instrument runs all.
func skipLongOracle(t *testing.T, name string, long ...string) {
	t.Helper()
	if os.Getenv("DCPI_ORACLE_ALL") == "" && slices.Contains(long, name) {
		t.Skipf("%s against the oracle runs with DCPI_ORACLE_ALL=1", name)
	}
}
