package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/internal/hotlist"
	"dcpi/simhost"
	"dcpi/wire"
)

// valuesDB writes a database with one load's latency hot list, as a node
// with value sampling would: /bin/app's load at offset 0x120 hit the
// D-cache 70 times and went to memory 30 times, with 100 CYCLES samples
// there; and a register result at 0x130 held 0x2a 90 times in 100.
func valuesDB(t *testing.T) string {
	t.Helper()
	dir, db, app := appDB(t, []wire.Symbol{{Name: "main", Addr: 0x120000100, Size: 0x100}})
	b := &wire.Batch{Version: 2, Host: "h", Seq: 1, Epoch: 1, Entries: []wire.Entry{{Image: app, Offset: 0x120, Count: 100}}}
	if _, err := db.ApplyBatch(b); err != nil {
		t.Fatal(err)
	}
	r := &wire.ValuesRecord{Version: 1, Host: "h", Epoch: 1, Seq: 1, Module: "loadlat",
		Stats: wire.ValueStats{Interrupts: 10, Completed: 8, NoContext: 1, GaveUp: map[string]uint64{"pal": 1}},
		Lists: []wire.ValueList{
			{Image: app, Offset: 0x120, Kind: 1, List: hotlist.List{N: 100, Entries: []hotlist.Entry{{Value: 3, Count: 70}, {Value: 143, Count: 30}}}},
			{Image: app, Offset: 0x130, Kind: 2, List: hotlist.List{N: 100, Entries: []hotlist.Entry{{Value: 7, Count: 10}, {Value: 0x2a, Count: 90}}}},
		}}
	if _, err := db.ApplyValues(r); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return dir
}

func TestValuesCommand(t *testing.T) {
	dir := valuesDB(t)
	out, _, err := run(t, "values", "--db", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10 interrupts = 8 interpreted + 1 without user context + 1 gave up (pal)",
		"0x120000120  main", "70.0%", "30.0%", "3: 70.0%", "143: 30.0%", "  100  "} {
		if !strings.Contains(out, want) {
			t.Errorf("values: no %q in\n%s", want, out)
		}
	}
	// The web's values page shows what dcpi values prints.
	if page := webReport(t, dir, "/values"); page != out {
		t.Errorf("the web's /values shows\n%s\ndcpi values prints\n%s", page, out)
	}
	out, _, err = run(t, "values", "--db", dir, "--view", "frequent", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rows []struct {
			PC     uint64
			Kind   string
			Values []struct {
				Value string
				Share float64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Kind != "result" || rep.Rows[0].Values[0].Value != "0x2a" || rep.Rows[0].Values[0].Share != 0.9 {
		t.Fatalf("frequent view: %+v", rep)
	}
	if _, _, err := run(t, "values", "--db", dir, "--view", "nosuch"); err == nil || !strings.Contains(err.Error(), "latency, frequent or semiinv") {
		t.Fatalf("--view nosuch: %v", err)
	}
}

func TestProfileValuesUnknownModule(t *testing.T) {
	_, _, err := run(t, "profile", "--values", "nosuch", "-o", filepath.Join(t.TempDir(), "db"), "--", "hello")
	if err == nil || !strings.Contains(err.Error(), `unknown value-sampling module "nosuch" (known: loadlat, regvals, semiinv)`) {
		t.Fatalf("--values nosuch: %v", err)
	}
}

// TestValuesLatencyCPI profiles ptrchase with load-latency sampling and
// checks DCPI's estimates beside its top load: they are dcpicalc's for
// that instruction (dcpi calc --json's CPI and its block's frequency
// times the period), and CPI times executions is the CYCLES samples
// times their period.
func TestValuesLatencyCPI(t *testing.T) {
	if testing.Short() {
		t.Skip("profiles a timed run")
	}
	db := filepath.Join(t.TempDir(), "db")
	if _, _, err := run(t, "profile", "--values", "loadlat", "-o", db, "--", "ptrchase", "65536", "400000"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "values", "--db", db, "--json", "--limit", "1")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rows []struct {
			PC         uint64
			Procedure  string
			Cycles     uint64
			Executions float64
			CPI        float64
			CPIKnown   bool `json:"cpi_known"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	if len(rep.Rows) != 1 || !rep.Rows[0].CPIKnown || rep.Rows[0].Procedure != "chase" {
		t.Fatalf("rows: %+v", rep.Rows)
	}
	r := rep.Rows[0]
	period := float64(simhost.EventsPerSample(hwsim.DefaultProfile())[uint8(alpha.EvCycles)])
	if got := r.CPI * r.Executions; math.Abs(got/(float64(r.Cycles)*period)-1) > 1e-9 {
		t.Fatalf("CPI %.2f × %.0f executions = %.0f cycles; %d samples", r.CPI, r.Executions, got, r.Cycles)
	}
	out, _, err = run(t, "calc", "--db", db, "--json", "chase")
	if err != nil {
		t.Fatal(err)
	}
	var calc struct {
		Procedures []struct {
			Blocks []struct {
				Start, End uint64
				Frequency  float64
			}
			Instructions []struct {
				Addr uint64
				CPI  float64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &calc); err != nil || len(calc.Procedures) != 1 {
		t.Fatalf("%v in\n%s", err, out)
	}
	found := false
	for _, in := range calc.Procedures[0].Instructions {
		if in.Addr == r.PC {
			found = in.CPI == r.CPI
		}
	}
	for _, b := range calc.Procedures[0].Blocks {
		if r.PC >= b.Start && r.PC < b.End && math.Abs(b.Frequency*period/r.Executions-1) > 1e-9 {
			t.Fatalf("executions %.0f; dcpi calc's block frequency %.1f per P", r.Executions, b.Frequency)
		}
	}
	if !found {
		t.Fatalf("CPI %v at %#x is not dcpi calc's:\n%s", r.CPI, r.PC, out)
	}
	text, _, err := run(t, "values", "--db", db, "--limit", "1")
	if err != nil || !strings.Contains(text, "  cpi  ") || !strings.Contains(text, fmt.Sprintf("%.1f", r.CPI)) {
		t.Fatalf("text: %v\n%s", err, text)
	}
}

// TestValuesTruthAndAccuracyPlot profiles ptrchase with load-latency
// sampling and its value truth, and checks dcpi values --truth (the
// chase load's true level shares beside the estimates, from the same
// run) and --accuracy-plot (an SVG with a point per load with truth, and
// a summary); without --truth the plot is refused, and a file that is
// not a value truth file is named in the error.
func TestValuesTruthAndAccuracyPlot(t *testing.T) {
	if testing.Short() {
		t.Skip("profiles a timed run with ground truth")
	}
	dir := t.TempDir()
	db, vt, svg := filepath.Join(dir, "db"), filepath.Join(dir, "vt.txt"), filepath.Join(dir, "a.svg")
	if _, _, err := run(t, "profile", "--values", "loadlat", "--values-truth", vt, "-o", db, "--", "ptrchase", "65536", "200000"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "values", "--db", db, "--truth", vt, "--json", "--limit", "1")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rows []struct {
			Procedure string
			Levels    []float64
			Truth     *struct {
				Executions uint64
				Levels     []float64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Truth == nil || rep.Rows[0].Procedure != "chase" {
		t.Fatalf("rows: %s", out)
	}
	r := rep.Rows[0]
	// The chase load executes once per step (and the run's few others).
	if r.Truth.Executions < 200000 || r.Truth.Executions > 200100 || len(r.Truth.Levels) != 4 {
		t.Fatalf("truth: %+v", r.Truth)
	}
	for lv := range r.Levels {
		if math.Abs(r.Levels[lv]-r.Truth.Levels[lv]) > 0.15 {
			t.Errorf("level %d: estimate %.3f, truth %.3f", lv, r.Levels[lv], r.Truth.Levels[lv])
		}
	}
	text, _, err := run(t, "values", "--db", db, "--truth", vt, "--limit", "1")
	if err != nil || !strings.Contains(text, "truth (hwsim)") {
		t.Fatalf("text: %v\n%s", err, text)
	}
	out, _, err = run(t, "values", "--db", db, "--truth", vt, "--accuracy-plot", svg)
	if err != nil || !strings.Contains(out, "loads with ground truth") {
		t.Fatalf("plot: %v\n%s", err, out)
	}
	data, err := os.ReadFile(svg)
	if err != nil || !strings.HasPrefix(string(data), "<svg") || strings.Count(string(data), "<circle") < 5 {
		t.Fatalf("svg: %v\n%.300s", err, data)
	}
	if _, _, err := run(t, "values", "--db", db, "--accuracy-plot", svg); err == nil || !strings.Contains(err.Error(), "needs --truth") {
		t.Fatalf("plot without truth: %v", err)
	}
	if _, _, err := run(t, "values", "--db", db, "--truth", svg); err == nil || !strings.Contains(err.Error(), "not a value truth file") {
		t.Fatalf("--truth of an SVG: %v", err)
	}
}
