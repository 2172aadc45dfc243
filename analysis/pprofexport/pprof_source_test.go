package pprofexport

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
)

// sourceLineOf is the 1-based number of the first line of text (from
// ../workloads/FILE) that matches re, 0 when none does.
func sourceLineOf(t *testing.T, file string, re string) (int, []string) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "workloads", file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	r := regexp.MustCompile(re)
	for i, l := range lines {
		if r.MatchString(l) {
			return i + 1, lines
		}
	}
	return 0, lines
}

// TestPprofSourceLinesAndInlines exports samples on every instruction of
// sort's quick, into which the compiler inlined swap, with the image's
// DWARF: a location in swap's code has two Lines, swap at a line of its
// body and then quick at a line that calls swap; every location has a
// file and line; the functions carry files and the lines they start at.
func TestPprofSourceLinesAndInlines(t *testing.T) {
	data, err := workloads.Binary("sort")
	if err != nil {
		t.Fatal(err)
	}
	r, im := elfRecord(t, data, "/bin/sort", false)
	src := analysis.NewMemSource()
	src.PutImage(r)
	quick, ok := im.SymbolNamed("quick")
	if !ok || quick.Size == 0 {
		t.Fatal("sort has no sized quick")
	}
	var total uint64
	for a := quick.Addr; a < quick.Addr+quick.Size; a += 4 {
		n := 1 + (a-quick.Addr)/4%5
		total += n
		src.Add(storage.Record{Epoch: 1, Event: evCycles, Image: r.Key, Offset: a - r.Base, Host: "alpha", Count: n})
	}
	var found []string
	p, err := Pprof(t.Context(), src, PprofQuery{Files: embeddedFinder{}, Periods: map[uint8]int64{evCycles: 63488},
		Found: func(rec *wire.ImageRecord, _ []byte, where string) { found = append(found, rec.Path+" "+where) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0] != "/bin/sort embedded /bin/sort" {
		t.Errorf("found %q", found)
	}

	// Sample types: the estimate first (the default), then the samples.
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "cycles" || p.SampleType[1].Type != "cycles_samples" ||
		p.DefaultSampleType != "cycles" || p.Period != 63488 || p.PeriodType.Type != "cycles" {
		t.Fatalf("sample types %v default %q period %d %v", p.SampleType, p.DefaultSampleType, p.Period, p.PeriodType)
	}
	var got uint64
	for _, s := range p.Sample {
		if s.Value[0] != 63488*s.Value[1] {
			t.Fatalf("values %v: estimate is not samples x period", s.Value)
		}
		got += uint64(s.Value[1])
	}
	if got != total {
		t.Errorf("%d samples, want %d", got, total)
	}

	m := p.Mapping[0]
	if m.Start != 0x120000000 || m.Offset != 0 || m.Limit < r.TextEnd || !m.HasFunctions || !m.HasFilenames ||
		!m.HasLineNumbers || !m.HasInlineFrames {
		t.Errorf("mapping %+v", m)
	}

	swapDecl, lines := sourceLineOf(t, "src/sort.c", `^static inline void swap\(`)
	quickDecl, _ := sourceLineOf(t, "src/sort.c", `^static void quick\(`)
	if swapDecl == 0 || quickDecl == 0 {
		t.Fatal("sort.c declares no swap or quick")
	}
	inlined := 0
	for _, l := range p.Location {
		if len(l.Line) == 0 {
			t.Fatalf("location %#x has no line", l.Address)
		}
		outer := l.Line[len(l.Line)-1]
		if outer.Function.Name != "quick" || outer.Function.Filename != "src/sort.c" || outer.Function.StartLine != int64(quickDecl) {
			t.Fatalf("location %#x: outermost function %+v", l.Address, outer.Function)
		}
		for _, ln := range l.Line {
			if ln.Line <= 0 || ln.Function.Filename == "" {
				t.Fatalf("location %#x: line %+v of %+v", l.Address, ln, ln.Function)
			}
		}
		if len(l.Line) < 2 || l.Line[0].Function.Name != "swap" {
			continue
		}
		inlined++
		in := l.Line[0]
		if in.Function.StartLine != int64(swapDecl) || in.Line <= int64(swapDecl) || in.Line > int64(swapDecl)+5 {
			t.Errorf("location %#x: inlined frame %+v at line %d, swap starts at %d", l.Address, in.Function, in.Line, swapDecl)
		}
		if call := lines[l.Line[1].Line-1]; !strings.Contains(call, "swap(") {
			t.Errorf("location %#x: quick's frame at line %d, %q, which does not call swap", l.Address, l.Line[1].Line, call)
		}
	}
	if inlined == 0 {
		t.Error("no location in swap's inlined code")
	}

	// Without the image's bytes: one line per location, the symbol's
	// function, as before; the mapping says so.
	p, err = Pprof(t.Context(), src, PprofQuery{Files: findNothing{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Location {
		if len(l.Line) != 1 || l.Line[0].Line != 0 || l.Line[0].Function.Name != "quick" || l.Line[0].Function.Filename != "" {
			t.Fatalf("location %#x without DWARF: %+v", l.Address, l.Line)
		}
	}
	if m := p.Mapping[0]; m.HasFilenames || m.HasLineNumbers || m.HasInlineFrames || !m.HasFunctions {
		t.Errorf("mapping without the file %+v", m)
	}
	if len(p.SampleType) != 1 || p.SampleType[0].Type != "cycles" || p.SampleType[0].Unit != "samples" || p.Period != 1 {
		t.Errorf("without periods: sample types %v period %d", p.SampleType, p.Period)
	}
}

// TestPprofMappingOrder: the user image with the most samples is the main
// mapping, the kernel the last, whatever order the database holds them in.
func TestPprofMappingOrder(t *testing.T) {
	p, err := Pprof(t.Context(), fixture(), PprofQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Mapping) < 3 {
		t.Fatalf("%d mappings", len(p.Mapping))
	}
	perMapping := map[*profile.Mapping]int64{}
	for _, s := range p.Sample {
		for _, v := range s.Value {
			perMapping[s.Location[0].Mapping] += v
		}
	}
	if last := p.Mapping[len(p.Mapping)-1]; last.File != "/vmunix" {
		t.Errorf("last mapping %s, want the kernel", last.File)
	}
	for i, m := range p.Mapping {
		if m.ID != uint64(i+1) {
			t.Errorf("mapping %d has ID %d", i, m.ID)
		}
		if i > 0 && i < len(p.Mapping)-1 && perMapping[m] > perMapping[p.Mapping[i-1]] {
			t.Errorf("mapping %s (%d samples) after %s (%d)", m.File, perMapping[m], p.Mapping[i-1].File, perMapping[p.Mapping[i-1]])
		}
	}
}

func TestPprofBadPeriod(t *testing.T) {
	for _, n := range []int64{0, -1} {
		if _, err := Pprof(t.Context(), fixture(), PprofQuery{Periods: map[uint8]int64{evCycles: n}}); !errors.Is(err, analysis.ErrQuery) {
			t.Errorf("period %d: err %v, want analysis.ErrQuery", n, err)
		}
	}
}

// TestPprofUserProgramInGoToolPprof compiles a C program with the Alpha
// cross compiler (skipped without it), profiles every instruction of its
// main, and reads the export with go tool pprof: -list shows the C source
// lines with counts, and -lines names file:line, the inlined helper
// included.
func TestPprofUserProgramInGoToolPprof(t *testing.T) {
	cc, err := exec.LookPath("alpha-linux-gnu-gcc")
	if err != nil {
		t.Skip("no alpha-linux-gnu-gcc")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	dir := t.TempDir()
	const prog = `static inline unsigned long mix(unsigned long x)
{
	x ^= x >> 13;
	x *= 0x9e3779b97f4a7c15UL;
	return x ^ (x >> 29);
}

int main(int argc, char **argv)
{
	unsigned long h = argc;
	for (long i = 0; i < 1000000; i++)
		h = mix(h + i);
	return (int)(h & 1);
}
`
	if err := os.WriteFile(filepath.Join(dir, "my.c"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "my")
	cmd := exec.Command(cc, "-O2", "-g", "-static", "-mcpu=ev5", "-Wl,--no-relax", "my.c", "-o", bin)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	r, im := elfRecord(t, data, bin, false)
	src := analysis.NewMemSource()
	src.PutImage(r)
	main, ok := im.SymbolNamed("main")
	if !ok || main.Size == 0 {
		t.Fatal("no sized main")
	}
	for a := main.Addr; a < main.Addr+main.Size; a += 4 {
		src.Add(storage.Record{Epoch: 1, Event: evCycles, Image: r.Key, Offset: a - r.Base, Host: "alpha", Count: 1000 + (a-main.Addr)/4})
	}
	p, err := Pprof(t.Context(), src, PprofQuery{Files: bytesFinder(data), Periods: map[uint8]int64{evCycles: 63488}})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "my.pb.gz")
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pprof := func(args ...string) string {
		c := exec.Command(goTool, append([]string{"tool", "pprof"}, append(args, out)...)...)
		c.Dir = dir // where the line table's file names resolve
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof %v: %v\n%s", args, err, b)
		}
		return string(b)
	}

	// -list: main's source with counts; each counted line is a line of
	// my.c with the text the file has there.
	list := pprof("-list", "^main$", "-sample_index=cycles_samples")
	if !strings.Contains(list, "ROUTINE ======================== main in ") {
		t.Fatalf("no routine main:\n%s", list)
	}
	srcLines := strings.Split(prog, "\n")
	counted := 0
	row := regexp.MustCompile(`^\s+(\d+)\s+(\d+|\.)\s+(\d+):(.*)$`)
	for _, l := range strings.Split(list, "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[3])
		if n < 1 || n > len(srcLines) || strings.TrimSpace(m[4]) != strings.TrimSpace(srcLines[n-1]) {
			t.Errorf("listed line %d %q, my.c has %q", n, m[4], srcLines[max(0, min(n, len(srcLines))-1)])
		}
		counted++
	}
	if counted < 2 {
		t.Errorf("%d lines with counts in -list:\n%s", counted, list)
	}

	// -lines: file:line rows, the inlined mix among them.
	lines := pprof("-top", "-lines")
	if !regexp.MustCompile(`(?m)\smix \S*/my\.c:[345] \(inline\)$`).MatchString(lines) ||
		!regexp.MustCompile(`(?m)\smain \S*/my\.c:1[0-3]$`).MatchString(lines) {
		t.Errorf("-lines misses mix (inlined, lines 3-5) or main's loop (10-13):\n%s", lines)
	}
}
