package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// TestPprofCommandTotals exports a dcpi node database and checks, with the
// pprof package, that every event's total is the database's, exactly, and
// that the mappings carry the images' paths and build IDs.
func TestPprofCommandTotals(t *testing.T) {
	db := nodeDB(t)
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	summary, _, err := run(t, "pprof", "--db", db, "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(summary, "wrote "+out+": cycles = ") {
		t.Errorf("summary %q", summary)
	}
	p := readProfile(t, out)
	sdb, err := storage.Open(db, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// Each event is two sample types: its estimated count (samples x its
	// mean period, 63488 for cycles), then its samples.
	if len(p.SampleType) != 2 || p.Period != 63488 || p.PeriodType.Type != "cycles" {
		t.Fatalf("sample types %v, period %d %v", p.SampleType, p.Period, p.PeriodType)
	}
	for i := 1; i < len(p.SampleType); i += 2 {
		st := p.SampleType[i]
		ev, err := analysis.ParseEvent(strings.TrimSuffix(st.Type, "_samples"))
		if err != nil || !strings.HasSuffix(st.Type, "_samples") || p.SampleType[i-1].Type != analysis.EventName(ev) {
			t.Fatalf("sample types %+v %+v: %v", p.SampleType[i-1], st, err)
		}
		want, _, _, err := sdb.Totals(storage.Query{Events: []uint8{ev}})
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for _, s := range p.Sample {
			got += s.Value[i]
			if s.Value[i-1] != s.Value[i]*p.Period {
				t.Fatalf("sample %v: estimate is not samples x %d", s.Value, p.Period)
			}
		}
		if uint64(got) != want {
			t.Errorf("%s: profile holds %d samples, database %d", st.Type, got, want)
		}
	}
	sdb.Close()
	files := map[string]bool{}
	for _, m := range p.Mapping {
		files[m.File] = true
		if len(m.BuildID) != 40 {
			t.Errorf("mapping %s: build ID %q", m.File, m.BuildID)
		}
	}
	for _, f := range []string{"/bin/sort", "/bin/ccdriver", "/vmunix"} {
		if !files[f] {
			t.Errorf("no mapping for %s", f)
		}
	}

	// Labels: one host and one epoch in a dcpi node database.
	out2 := filepath.Join(t.TempDir(), "tagged.pb.gz")
	if _, _, err := run(t, "pprof", "--db", db, "--by-host", "--epochs", "1-1", "--by-epoch", "-o", out2, "--json"); err != nil {
		t.Fatal(err)
	}
	for _, s := range readProfile(t, out2).Sample {
		if s.Label["host"][0] != "alpha0" || s.NumLabel["epoch"][0] != 1 {
			t.Fatalf("sample labels %v %v", s.Label, s.NumLabel)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--by-epoch"}, "lists no epochs"},
		{[]string{"-o", ""}, "--output"},
		{[]string{"--event", "bogus"}, `unknown event "bogus"`},
		{[]string{"-o", filepath.Join(t.TempDir(), "no", "such", "dir")}, "--output"},
	} {
		_, _, err := run(t, append([]string{"pprof", "--db", db}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dcpi pprof %v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

func readProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPprofTopMatchesProf runs go tool pprof -top -noinlines on an export
// and checks that its top function is dcpi prof's first row.
func TestPprofTopMatchesProf(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	db := nodeDB(t)
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	if _, _, err := run(t, "pprof", "--db", db, "-o", out); err != nil {
		t.Fatal(err)
	}
	// -noinlines: dcpi prof counts an inlined procedure's instructions in
	// the procedure they were compiled into, as pprof does without the
	// inlined frames the export gives from DWARF.
	top, err := exec.Command(goTool, "tool", "pprof", "-top", "-noinlines", out).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, top)
	}
	js, _, err := run(t, "prof", "--db", db, "--limit", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var tb report.ProfTable
	if err := json.Unmarshal([]byte(js), &tb); err != nil {
		t.Fatal(err)
	}
	want := tb.Rows[0].Procedure
	var got string
	sc := bufio.NewScanner(strings.NewReader(string(top)))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "flat%") && sc.Scan() {
			ff := strings.Fields(sc.Text())
			got = ff[len(ff)-1]
			break
		}
	}
	if got != want {
		t.Errorf("pprof -top's first function %q, dcpi prof's first procedure %q\n%s", got, want, top)
	}
}

// appDB opens a fresh database in a temporary directory holding the
// image of /bin/app (buildid:0101, text 0x120000000-0x120001000) with
// syms, for a test to add profiles to and close.
func appDB(t *testing.T, syms []wire.Symbol) (string, *storage.DB, wire.ImageKey) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	app := wire.MustParseImageKey("buildid:0101")
	err = db.PutImage(&wire.ImageRecord{Version: wire.Version, Key: app, Path: "/bin/app", TextStart: 0x120000000, TextEnd: 0x120001000, Base: 0x120000000,
		Symbols: syms})
	if err != nil {
		t.Fatal(err)
	}
	return dir, db, app
}

// setsDB builds a database with storage directly: /bin/app on two hosts in
// two epochs, where work's share grows in epoch 2 on host b.
func setsDB(t *testing.T) string {
	t.Helper()
	dir, db, k := appDB(t, []wire.Symbol{{Name: "main", Addr: 0x120000000, Size: 0x100}, {Name: "work", Addr: 0x120000100, Size: 0x100}})
	seq := map[string]uint64{}
	put := func(host string, epoch uint64, main, work uint64) {
		seq[host]++
		b := &wire.Batch{Version: wire.Version, Host: host, CPU: 0, Seq: seq[host], Epoch: epoch, Entries: []wire.Entry{
			{Image: k, Offset: 0x10, Event: 0, Count: main},
			{Image: k, Offset: 0x110, Event: 0, Count: work},
		}}
		b.Normalize()
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	put("a", 1, 1000, 1000)
	put("b", 1, 1010, 990)
	put("a", 2, 1000, 1020)
	put("b", 2, 500, 1500)
	for _, e := range []uint64{1, 2} {
		if err := db.PutEpoch(storage.Epoch{Number: e, State: storage.EpochSealed}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	return dir
}

// TestPprofSourceInGoToolPprof exports a dcpi node database of the
// embedded workloads (built with -g) and reads it with go tool pprof as
// docs/tools.md says: -list shows sort.c's lines with counts, -lines names
// file:line with the inlined procedures' frames, the -http view serves the
// source view, and --binaries writes the image files under their build IDs.
func TestPprofSourceInGoToolPprof(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	db := nodeDB(t)
	dir := t.TempDir()
	out, bins := filepath.Join(dir, "p.pb.gz"), filepath.Join(dir, "bins")
	summary, _, err := run(t, "pprof", "--db", db, "--binaries", bins, "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary, "  /bin/sort: embedded /bin/sort, with source lines\n") {
		t.Errorf("summary %q", summary)
	}
	p := readProfile(t, out)
	if p.Mapping[0].File != "/bin/sort" && p.Mapping[0].File != "/bin/ccdriver" || p.Mapping[len(p.Mapping)-1].File != "/vmunix" {
		t.Errorf("mappings %v", p.Mapping)
	}
	for _, m := range p.Mapping {
		data, err := os.ReadFile(filepath.Join(bins, m.BuildID, filepath.Base(m.File)))
		if err != nil {
			t.Fatal(err)
		}
		if k, _, err := symbolize.ImageKeyOf(data, m.File); err != nil || k.Kind() != wire.KindBuildID || hex.EncodeToString(k.ID()) != m.BuildID {
			t.Errorf("%s: written file is %v (%v), mapping's build ID %s", m.File, k, err, m.BuildID)
		}
	}
	workloads, err := filepath.Abs(filepath.Join("..", "..", "workloads"))
	if err != nil {
		t.Fatal(err)
	}
	pprof := func(args ...string) string {
		c := exec.Command(goTool, append([]string{"tool", "pprof"}, append(args, out)...)...)
		c.Dir = workloads // the line tables name src/sort.c
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	text, err := os.ReadFile(filepath.Join(workloads, "src", "sort.c"))
	if err != nil {
		t.Fatal(err)
	}
	srcLines := strings.Split(string(text), "\n")
	list := pprof("-list", "^sift$")
	if !strings.Contains(list, "ROUTINE ======================== sift in src/sort.c") {
		t.Fatalf("-list sift:\n%s", list)
	}
	row := regexp.MustCompile(`^\s+(\d+)\s+(\d+|\.)\s+(\d+):(.*)$`)
	counted := 0
	for _, l := range strings.Split(list, "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[3])
		if n < 1 || n > len(srcLines) || strings.TrimSpace(m[4]) != strings.TrimSpace(srcLines[n-1]) {
			t.Errorf("-list line %d %q is not sort.c's", n, m[4])
		}
		counted++
	}
	if counted < 3 {
		t.Errorf("-list sift: %d lines with counts\n%s", counted, list)
	}
	lines := pprof("-top", "-lines")
	for _, re := range []string{`(?m)\ssift src/sort\.c:\d+$`, `(?m)\swtint kernel\.c:\d+ \(inline\)$`} {
		if !regexp.MustCompile(re).MatchString(lines) {
			t.Errorf("-lines has no row matching %s:\n%s", re, lines)
		}
	}

	// -http: the web UI's source view of ccdriver's pass_link. (Not sort's
	// sift: the web view disassembles the mapping's file when it exists,
	// and /bin/sort on the machine running the test is the host's sort.)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// The pprof binary itself (go tool -n names it), not the go command,
	// so that killing it stops the server.
	bin, err := exec.Command(goTool, "tool", "-n", "pprof").Output()
	if err != nil {
		t.Fatalf("go tool -n pprof: %v", err)
	}
	web := exec.Command(strings.TrimSpace(string(bin)), "-no_browser", "-http="+addr, out)
	web.Dir = workloads
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { web.Process.Kill(); web.Wait() }()
	var page string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/ui/source?f=%5Epass_link")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			page = string(b)
			break
		}
	}
	if !strings.Contains(page, "src/ccdriver.c") || !strings.Contains(page, "uint32_t sym[512];") ||
		!strings.Contains(page, "<span class=livesrc>") {
		i := strings.Index(page, `id="content"`)
		t.Errorf("-http source view of pass_link lacks ccdriver.c's text with counts:\n%.3000s", page[max(i, 0):])
	}

	for _, tc := range []struct{ arg, want string }{
		{"cycles", "want EVENT=N"},
		{"bogus=4", `unknown event "bogus"`},
		{"cycles=-1", "want a number of events >= 0"},
	} {
		if _, _, err := run(t, "pprof", "--db", db, "--period", tc.arg, "-o", filepath.Join(dir, "x.pb.gz")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--period %s: err %v, want %q", tc.arg, err, tc.want)
		}
	}
	// --period cycles=0: samples alone, as type cycles.
	if _, _, err := run(t, "pprof", "--db", db, "--period", "cycles=0", "-o", out); err != nil {
		t.Fatal(err)
	}
	if p := readProfile(t, out); len(p.SampleType) != 1 || p.SampleType[0].Type != "cycles" || p.SampleType[0].Unit != "samples" || p.Period != 1 {
		t.Errorf("--period cycles=0: %v period %d", p.SampleType, p.Period)
	}
}
