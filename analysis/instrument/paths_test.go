package instrument

import (
	"bytes"
	"strings"
	"testing"

	"dcpi/analysis/oracle"
	"dcpi/analysis/paths"
	"dcpi/hwsim"
	"dcpi/workloads"
)

// pathsCases are the workloads the paths mode is held to the oracle on:
// tiny has no glibc, recurse recurses deeply, sort branches on data,
// interp has jump tables (its computed-goto run_threaded has too many
// paths and is refused), ccdriver forks and execs itself.
var pathsCases = []struct {
	name string
	args []string
	// minPaths is a floor on the distinct paths counted: fewer means the
	// counters are not working.
	minPaths int
}{
	{"tiny", nil, 4},
	{"recurse", []string{"1"}, 100},
	{"sort", []string{"2000"}, 100},
	{"interp", []string{"1"}, 100},
	{"ccdriver", []string{"1"}, 100},
}

// excludedFromPaths says why a counted procedure is not compared with the
// oracle, or "".
func excludedFromPaths(name string) string {
	if strings.HasPrefix(name, "_dlfo_") {
		// glibc's _dl_find_object start-up sorts the program's PT_LOAD
		// segments; the instrumented image has one more.
		return "runs differently with one more PT_LOAD"
	}
	return ""
}

// TestPathCountsEqualOracle instruments workloads in paths mode, runs them
// on hwsim, and requires the original's output and, for every counted
// procedure, path counts equal to the oracle's of the uninstrumented run.
// The oracle is the reference only; the counts come from the instrumented
// program's own dump.
func TestPathCountsEqualOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads with the oracle")
	}
	for _, tc := range pathsCases {
		t.Run(tc.name, func(t *testing.T) {
			skipLongOracle(t, tc.name, "interp", "recurse")
			orig, res := instrumentWorkload(t, tc.name, ModePaths)
			var o *oracle.Oracle
			wantOut, wantErr, _, origCycles, _ := simRunHook(t, tc.name, orig, tc.args, func(m *hwsim.Machine, files map[string][]byte) func() {
				o = oracle.New(oracle.FilesResolver(files))
				o.Attach(m)
				return o.Finish
			})
			gotOut, gotErr, _, instCycles, files := simRun(t, tc.name, res.ELF, tc.args)
			if !bytes.Equal(gotOut, wantOut) || !bytes.Equal(gotErr, wantErr) {
				t.Fatalf("instrumented output differs:\n got %q / %q\nwant %q / %q", gotOut, gotErr, wantOut, wantErr)
			}
			dump := files["pp.out"]
			if dump == nil {
				t.Fatalf("no dump written (files: %v)", files)
			}
			got, err := ReadPaths(res.ELF, dump.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range got.Special {
				if v != 0 {
					t.Errorf("special counter %s = %d, want 0 (no longjmp, no deep stack here)", name, v)
				}
			}
			for name, v := range got.HashOverflow {
				t.Logf("%s: %d path executions found its hash table full", name, v)
			}
			compareWithOracle(t, got, o.PathProfile(), "/bin/"+tc.name, tc.minPaths)
			t.Logf("%s: %d records, %d procedures counted, %d skipped, %d trampolines (%d spills); cycles %d -> %d (%.2fx)",
				tc.name, got.Records, len(res.Manifest.Procs), len(res.Manifest.Skipped), res.Manifest.Trampolines, res.Manifest.Spills,
				origCycles, instCycles, float64(instCycles)/float64(origCycles))
		})
	}
}

func compareWithOracle(t *testing.T, got *PathCounts, want *paths.Profile, path string, minPaths int) {
	t.Helper()
	var wim *paths.ImageProfile
	for i := range want.Images {
		if want.Images[i].Path == path {
			wim = &want.Images[i]
		}
	}
	if wim == nil {
		t.Fatalf("oracle has no image %s", path)
	}
	if len(got.Profile.Images) != 1 || got.Profile.Images[0].ID != wim.ID {
		t.Fatalf("instrumented profile's image is not the original's %s", wim.ID)
	}
	oracleBy := map[uint64]paths.ProcProfile{}
	for _, p := range wim.Procs {
		oracleBy[p.Entry] = p
	}
	gotBy := map[uint64]paths.ProcProfile{}
	for _, p := range got.Profile.Images[0].Procs {
		gotBy[p.Entry] = p
	}
	var bad, compared, counted int
	var total uint64
	report := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, pi := range got.Manifest.Procs {
		if excludedFromPaths(pi.Name) != "" {
			continue
		}
		compared++
		g, w := gotBy[pi.Start], oracleBy[pi.Start]
		if w.NumPaths != 0 && w.NumPaths != pi.NumPaths {
			report("%s: %d paths, the oracle numbers %d", pi.Name, pi.NumPaths, w.NumPaths)
			continue
		}
		wc := map[uint64]uint64{}
		for _, pc := range w.Paths {
			wc[pc.ID] = pc.Count
		}
		for _, pc := range g.Paths {
			counted++
			total += pc.Count
			if wc[pc.ID] != pc.Count {
				report("%s path %d: counted %d, oracle %d", pi.Name, pc.ID, pc.Count, wc[pc.ID])
			}
			delete(wc, pc.ID)
		}
		for id, c := range wc {
			report("%s path %d: counted 0, oracle %d", pi.Name, id, c)
		}
	}
	if bad > 0 {
		t.Errorf("%d path counts differ from the oracle", bad)
	}
	if counted < minPaths {
		t.Errorf("only %d paths counted: the counters are not working", counted)
	}
	t.Logf("%d procedures compared; %d distinct paths (%d executions) equal the oracle", compared, counted, total)
}

// TestReadPathsRefusesBadInput: a pixie binary, a truncated dump and a
// dump of another image are errors, never a silent short profile.
func TestReadPathsRefusesBadInput(t *testing.T) {
	orig, err := workloads.Binary("tiny")
	if err != nil {
		t.Fatal(err)
	}
	pathsRes, err := Instrument(orig, "tiny", Options{Mode: ModePaths, DumpPath: "pp.out"})
	if err != nil {
		t.Fatal(err)
	}
	pixieRes, err := Instrument(orig, "tiny", Options{Mode: ModePixie, DumpPath: "pp.out"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, files := simRun(t, "tiny", pathsRes.ELF, nil)
	dump := files["pp.out"].Bytes()
	if _, err := ReadPaths(pathsRes.ELF, dump); err != nil {
		t.Fatalf("good dump: %v", err)
	}
	if _, err := ReadPaths(pixieRes.ELF, dump); err == nil {
		t.Error("a pixie image read as paths")
	}
	if _, err := ReadCounts(pathsRes.ELF, dump); err == nil {
		t.Error("a paths dump read as pixie counts")
	}
	if _, err := ReadPaths(pathsRes.ELF, dump[:len(dump)-8]); err == nil {
		t.Error("a truncated dump read")
	}
	if _, err := ReadPaths(pathsRes.ELF, nil); err == nil {
		t.Error("an empty dump read")
	}
}
