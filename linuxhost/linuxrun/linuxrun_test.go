package linuxrun

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/linuxhost"
	"dcpi/profiledb"
	"dcpi/storage"
	"dcpi/wire"
)

// hotWork is hot.c's argument: about a second of one CPU here.
const hotWork = "400000000"

// buildHot compiles testdata/hot.c as the issue asks (frame pointers,
// DWARF) into a temporary directory.
func buildHot(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("profiling a command per CPU needs root here")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	bin := filepath.Join(t.TempDir(), "hot")
	out, err := exec.Command(gcc, "-O2", "-g", "-fno-omit-frame-pointer", "../testdata/hot.c", "-o", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// perfShares runs perf record -F 999 -e cpu-clock on argv and returns
// each user symbol's share of the samples (0..1) and the sample count.
func perfShares(t *testing.T, argv ...string) (map[string]float64, int) {
	t.Helper()
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("no perf")
	}
	data := filepath.Join(t.TempDir(), "perf.data")
	rec := exec.Command(perf, append([]string{"record", "-q", "-F", "999", "-e", "cpu-clock", "-o", data, "--"}, argv...)...)
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	out, err := exec.Command(perf, "report", "-i", data, "--stdio", "--sort", "sym", "--no-children", "-q").Output()
	if err != nil {
		t.Fatalf("perf report: %v", err)
	}
	shares := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		p, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err == nil {
			shares[f[len(f)-1]] += p / 100
		}
	}
	n := 0
	if st, err := exec.Command(perf, "script", "-i", data, "-F", "ip").Output(); err == nil {
		n = strings.Count(string(st), "\n")
	}
	return shares, n
}

// dcpiShares is each procedure's share of a profile database's samples.
func dcpiShares(t *testing.T, dir string) (map[string]float64, uint64) {
	t.Helper()
	sdb, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	db := profiledb.NewLocal(sdb)
	table, err := report.Prof(context.Background(), symbolize.New(db), report.ProfQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, r := range table.Rows {
		total += r.Counts[0]
	}
	shares := map[string]float64{}
	for _, r := range table.Rows {
		shares[r.Procedure] += float64(r.Counts[0]) / float64(total)
	}
	return shares, total
}

// TestAgreesWithPerf profiles hot.c with perf record and with dcpi
// profile --linux at the same rate: hot_a, hot_b and hot_c take about
// 6:3:1 of the samples in both, within sampling error, and dcpi's
// conservation is exact (Profile fails otherwise).
func TestAgreesWithPerf(t *testing.T) {
	bin := buildHot(t)
	ps, pn := perfShares(t, bin, hotWork)
	out := filepath.Join(t.TempDir(), "db")
	var log bytes.Buffer
	code, err := Profile(context.Background(), &log, Config{Argv: []string{bin, hotWork}, Output: out, Host: "linux0",
		Event: "cpu-clock", Freq: 999, Stdout: io.Discard, Stderr: io.Discard})
	t.Logf("dcpi profile --linux:\n%s", log.String())
	if err != nil || code != 0 {
		t.Fatalf("Profile: status %d, %v", code, err)
	}
	if !strings.Contains(log.String(), ": balanced") {
		t.Fatalf("no balanced conservation line")
	}
	ds, dn := dcpiShares(t, out)
	if pn < 300 || dn < 300 {
		t.Skipf("too few samples to compare (perf %d, dcpi %d): machine too loaded", pn, dn)
	}
	for _, fn := range []string{"hot_a", "hot_b", "hot_c"} {
		p, d := ps[fn], ds[fn]
		// Two independent binomial estimates: their difference has
		// this standard deviation; allow 4 of it and 3 points for what
		// the two runs differ in (scheduling on a loaded machine).
		sd := math.Sqrt(p*(1-p)/float64(pn) + d*(1-d)/float64(dn))
		t.Logf("%s: perf %.1f%% of %d, dcpi %.1f%% of %d (sd of the difference %.1f points)", fn, 100*p, pn, 100*d, dn, 100*sd)
		if math.Abs(p-d) > 4*sd+0.03 {
			t.Errorf("%s: perf %.1f%%, dcpi %.1f%%: more than sampling error apart", fn, 100*p, 100*d)
		}
	}
	if ds["hot_a"] < ds["hot_b"] || ds["hot_b"] < ds["hot_c"] {
		t.Errorf("dcpi's order of the hot functions is wrong: %v", ds)
	}
}

// TestMachineRecorded: the profile's host says it is a Linux machine, and
// the tools that need the simulated one refuse it by name.
func TestMachineRecorded(t *testing.T) {
	bin := buildHot(t)
	out := filepath.Join(t.TempDir(), "db")
	if _, err := Profile(context.Background(), io.Discard, Config{Argv: []string{bin, "1000000"}, Output: out, Host: "linux0",
		Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	sdb, err := storage.Open(out, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	db := profiledb.NewLocal(sdb)
	err = profiledb.RefuseMachines(context.Background(), db, "dcpi-calc")
	if err == nil || !strings.Contains(err.Error(), linuxhost.Machine()) {
		t.Fatalf("calc on a Linux profile: %v", err)
	}
	t.Log(err)
	if err := profiledb.RefuseMachines(context.Background(), db, "dcpi-prof"); err != nil {
		t.Fatalf("prof on a Linux profile: %v", err)
	}
}

// TestProfileStacks: with stacks, the run walks copied user stacks and
// says so in its stacks line; conservation holds with the stack view.
func TestProfileStacks(t *testing.T) {
	bin := buildHot(t)
	var buf bytes.Buffer
	if _, err := Profile(context.Background(), &buf, Config{Argv: []string{bin, "100000000"}, Output: filepath.Join(t.TempDir(), "db"),
		Host: "linux0", Stacks: true, Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), "stacks: ") || !strings.Contains(buf.String(), "walked from 8192-byte copies") {
		t.Errorf("no stacks line in\n%s", buf.String())
	}
	t.Log(buf.String())
}

// fileFinder reads an image at its recorded path.
type fileFinder struct{}

func (fileFinder) FindImage(_ context.Context, rec *wire.ImageRecord) ([]byte, string, error) {
	data, err := os.ReadFile(rec.Path)
	return data, rec.Path, err
}

// TestListNative: dcpi list of a Linux profile disassembles x86-64 (or
// arm64) with the samples on its instructions and hot.c's lines.
func TestListNative(t *testing.T) {
	bin := buildHot(t)
	out := filepath.Join(t.TempDir(), "db")
	if _, err := Profile(context.Background(), io.Discard, Config{Argv: []string{bin, "100000000"}, Output: out, Host: "linux0",
		Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	sdb, err := storage.Open(out, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	l, err := report.List(context.Background(), profiledb.NewLocal(sdb), report.ListQuery{Procedures: []string{"hot_a"}, Files: fileFinder{}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := l.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", buf.String())
	p := l.Procedures[0]
	var insns, sampled uint64
	for _, ln := range p.Lines {
		if ln.File == "" {
			insns++
			if ln.Counts[0] > 0 {
				sampled += ln.Counts[0]
			}
		}
	}
	if !p.HasLines || !strings.Contains(buf.String(), "hot.c:") || insns < 5 || sampled != p.Counts[0] || sampled == 0 {
		t.Errorf("listing of hot_a: %d instructions, %d of %d samples on them, lines %v", insns, sampled, p.Counts[0], p.HasLines)
	}
}
