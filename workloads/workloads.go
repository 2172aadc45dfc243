// Package workloads owns the project's own Alpha Linux test programs: their
// C sources (src/), the Makefile that builds them, the committed static
// 21164 ELF binaries (bin/), dynamically linked builds of the same sources
// (dyn/) and the expected output of each (expected/),
// all embedded here so that the simulator, the tests and `dcpi demo` can run
// them with nothing installed. It does not run them: that is hwsim's job.
//
// Every program takes an optional size argument; with none (or with its
// DefaultArgs, which say the same) it runs 5 to 40 million Alpha
// instructions and prints a deterministic checksum line. See README.md.
package workloads

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed bin dyn expected
var files embed.FS

// ErrUnknown is returned (wrapped) for a program name that is not embedded.
var ErrUnknown = errors.New("unknown workload")

// BinDir is the directory the simulator puts the workloads in: a program's
// argv[0] is BinDir + "/" + Name (ccdriver re-executes its argv[0], so it
// must be an absolute path).
const BinDir = "/bin"

// Workload describes one embedded program.
type Workload struct {
	Name        string
	Description string
	// DefaultArgs are the program's built-in defaults spelled out
	// (argv[1:]); running with them or with no arguments prints the same
	// expected output.
	DefaultArgs []string
}

// Argv returns the full argument vector for a default run:
// BinDir/Name followed by DefaultArgs.
func (w Workload) Argv() []string {
	return append([]string{BinDir + "/" + w.Name}, w.DefaultArgs...)
}

// catalog describes each program; a program built into bin/ but missing
// here is still listed by All, with an empty description (a test catches it).
var catalog = map[string]Workload{
	"ccdriver": {Description: "compiler-like driver: fork + execve of itself for 20 short passes, waitpid, exit statuses summed",
		DefaultArgs: []string{"5"}},
	"fpmix": {Description: "single-precision Mandelbrot, libm and Newton sqrt, FP divides, int<->FP conversions",
		DefaultArgs: []string{"1"}},
	"hashdb": {Description: "chained hash-table database: inserts, hit/miss lookups, updates, deletes, malloc churn",
		DefaultArgs: []string{"20000", "120000"}},
	"hello": {Description: "trivial glibc program: printf, stderr, malloc/free",
		DefaultArgs: []string{"1"}},
	"interp": {Description: "bytecode interpreter: switch jump-table and computed-goto dispatch (indirect jumps)",
		DefaultArgs: []string{"1"}},
	"matmul": {Description: "dense double matrix multiply: naive, i-k-j and cache-blocked",
		DefaultArgs: []string{"88"}},
	"micro": {Description: "microbenchmarks after Desikan et al. (ISCA 2001): control, execution core and memory loops, one per procedure",
		DefaultArgs: []string{"1"}},
	"missloop": {Description: "one D-cache-missing load a loop iteration, then 192 nops (the ProfileMe paper's Figure 2 loop)",
		DefaultArgs: []string{"16384", "60000"}},
	"ptrchase": {Description: "dependent loads around an 8 MB randomly permuted ring (cache and TLB misses)",
		DefaultArgs: []string{"262144", "2097152"}},
	"recurse": {Description: "recursion: Ackermann, Fibonacci, binary tree build/walk/free, n-queens",
		DefaultArgs: []string{"1"}},
	"server": {Description: "request loop: format, parse, hash lookup, snprintf responses, clock_gettime/gettimeofday",
		DefaultArgs: []string{"3000"}},
	"sort": {Description: "quicksort, mergesort and heapsort of pseudo-random keys, verified",
		DefaultArgs: []string{"25000"}},
	"stream": {Description: "STREAM-like copy/scale/add/triad/sum over three 4 MB double arrays",
		DefaultArgs: []string{"524288", "1"}},
	"strproc": {Description: "text processing: tokenizing, word counts, qsort/strcmp, KMP, a small regex engine",
		DefaultArgs: []string{"800"}},
	"tiny": {Description: "freestanding -nostdlib program: own _start, write and exit by call_pal 0x83",
		DefaultArgs: []string{}},
}

// mixes are named sets of programs to run at once, one per CPU or more.
var mixes = map[string][]string{
	// A varied set of longer programs: memory-bound, FP, pointer-heavy,
	// branchy, indirect-jump-heavy and syscall-using.
	"default": {"hashdb", "interp", "matmul", "ptrchase", "server", "stream"},
	// Integer, control-heavy programs in the spirit of SPECint.
	"specint-like": {"ccdriver", "hashdb", "interp", "recurse", "server", "sort", "strproc"},
	"fp":           {"fpmix", "matmul", "stream"},
	// Programs whose time goes to cache and TLB misses.
	"memory": {"hashdb", "ptrchase", "stream"},
	// Many processes: fork/exec/exit beside long runners.
	"processes": {"ccdriver", "ccdriver", "server", "sort"},
	// The two smallest programs, for a first test of a loader.
	"smoke": {"hello", "tiny"},
}

// names lists the embedded programs, sorted.
func names() []string {
	entries, err := fs.ReadDir(files, "bin")
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func known(name string) bool {
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return false
	}
	_, err := fs.Stat(files, path.Join("bin", name))
	return err == nil
}

// All returns every embedded program, sorted by name.
func All() []Workload {
	var out []Workload
	for _, n := range names() {
		w := catalog[n]
		w.Name = n
		w.DefaultArgs = append([]string{}, w.DefaultArgs...)
		out = append(out, w)
	}
	return out
}

// Binary returns the ELF image of the named program.
func Binary(name string) ([]byte, error) {
	if !known(name) {
		return nil, fmt.Errorf("workload %q: %w", name, ErrUnknown)
	}
	b, err := files.ReadFile(path.Join("bin", name))
	if err != nil {
		return nil, fmt.Errorf("workload %q: %w", name, err)
	}
	return b, nil
}

// DynamicBinary returns the dynamically linked build of the named program
// (dyn/NAME: the cross compiler's defaults, which need the sysroot's
// ld-linux.so.2 and libc.so.6.1 to run). It prints what Binary's does.
// tiny, which has no C library, has none (ErrUnknown).
func DynamicBinary(name string) ([]byte, error) {
	if !known(name) {
		return nil, fmt.Errorf("workload %q: %w", name, ErrUnknown)
	}
	b, err := files.ReadFile(path.Join("dyn", name))
	if err != nil {
		return nil, fmt.Errorf("workload %q: no dynamic build: %w", name, ErrUnknown)
	}
	return b, nil
}

// Expected returns what the named program prints on stdout and its exit
// status when run with its default arguments.
func Expected(name string) (stdout []byte, exit int, err error) {
	if !known(name) {
		return nil, 0, fmt.Errorf("workload %q: %w", name, ErrUnknown)
	}
	out, err := files.ReadFile(path.Join("expected", name+".out"))
	if err != nil {
		return nil, 0, fmt.Errorf("workload %q: expected output: %w", name, err)
	}
	code, err := files.ReadFile(path.Join("expected", name+".exit"))
	if err != nil {
		return nil, 0, fmt.Errorf("workload %q: expected exit status: %w", name, err)
	}
	exit, err = strconv.Atoi(strings.TrimSpace(string(code)))
	if err != nil {
		return nil, 0, fmt.Errorf("workload %q: expected exit status: %w", name, err)
	}
	return out, exit, nil
}

// Mixes returns named sets of programs to run at once across CPUs: "default"
// (six varied long-ish programs), "specint-like", "fp", "memory",
// "processes" and "smoke". A name may repeat to run two copies. The map is
// the caller's to modify.
func Mixes() map[string][]string {
	out := make(map[string][]string, len(mixes))
	for k, v := range mixes {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// ByName returns the embedded program called name.
func ByName(name string) (Workload, bool) {
	for _, w := range All() {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// Names lists the embedded programs' names, sorted.
func Names() []string { return names() }

// MixNames lists the mixes' names, sorted.
func MixNames() []string {
	out := make([]string, 0, len(mixes))
	for n := range mixes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
