package values

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"dcpi/analysis/internal/analysistest"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/alpha"
	"dcpi/internal/hotlist"
	"dcpi/node/valuemod"
	"dcpi/storage"
	"dcpi/wire"
)

// listSource serves fixed hot lists and accounting (a Source): /bin/app's
// load at 0x214 (analysistest.Fleet's main, 100 CYCLES samples there) hit
// the D-cache 70 times in 100 and went to memory 30 times, and the
// result at 0x260 (work) held 0x2a 90 times in 100.
type listSource struct {
	stats wire.ValueStats
}

func (s listSource) ValueLists(context.Context, storage.ValueQuery) ([]wire.ValueList, error) {
	return []wire.ValueList{
		{Image: analysistest.Key(1), Offset: 0x214, Kind: uint8(valuemod.KindLatency),
			List: hotlist.List{N: 100, Entries: []hotlist.Entry{{Value: 3, Count: 70}, {Value: 143, Count: 30}}}},
		{Image: analysistest.Key(1), Offset: 0x260, Kind: uint8(valuemod.KindResult),
			List: hotlist.List{N: 100, Entries: []hotlist.Entry{{Value: 7, Count: 10}, {Value: 0x2a, Count: 90}}}},
	}, nil
}

func (s listSource) ValueTotals(context.Context, storage.ValueQuery) ([]string, wire.ValueStats, error) {
	return []string{"loadlat"}, s.stats, nil
}

var sampled = listSource{wire.ValueStats{Interrupts: 10, Completed: 10}}

func TestParseView(t *testing.T) {
	for name, want := range map[string]View{"latency": Latency, "frequent": Frequent, "semiinv": SemiInvariant} {
		if v, err := ParseView(name); err != nil || v != want {
			t.Errorf("ParseView(%q) = %v, %v; want %v", name, v, err, want)
		}
	}
	if _, err := ParseView("semiinvariant"); err == nil || err.Error() != `--view "semiinvariant": want latency, frequent or semiinv` {
		t.Errorf("ParseView(semiinvariant): %v", err)
	}
}

// TestRunViews: the latency view bins the load's latencies by level
// beside its CYCLES samples, reading the periods for the CPI column (an
// error there leaves it empty); the frequent view lists the result's
// values and reads no periods; the text and the JSON are the report's.
func TestRunViews(t *testing.T) {
	ctx := context.Background()
	sym := symbolize.New(analysistest.Fleet())
	read := 0
	o := Options{Query: Query{View: Latency}, ReadPeriods: func(context.Context) (map[string]map[uint8]float64, error) {
		read++
		return nil, errors.New("no registry")
	}}
	res, err := Run(ctx, sampled, sym, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := res.Report.Rows
	if read != 1 || res.Plot != nil || len(rows) != 1 || rows[0].PC != analysistest.Base+0x214 || rows[0].Procedure != "main" ||
		rows[0].Cycles != 100 || rows[0].Levels[LevelDcache] != 0.7 || rows[0].Levels[LevelMemory] != 0.3 || rows[0].CPIKnown {
		t.Fatalf("latency view (periods read %d times): %+v", read, res.Report)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil || !strings.Contains(text.String(), "10 interrupts") || !strings.Contains(text.String(), "143: 30.0%") {
		t.Fatalf("text: %v\n%s", err, &text)
	}
	o.View = Frequent
	if res, err = Run(ctx, sampled, sym, o); err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	var back Report
	if err := res.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &back) != nil {
		t.Fatalf("json: %v\n%s", err, &js)
	}
	if read != 1 || back.View != "frequent" || len(back.Rows) != 1 || back.Rows[0].Kind != "result" ||
		back.Rows[0].Values[0].Value != "0x2a" || back.Rows[0].Values[0].Share != 0.9 || !strings.HasPrefix(js.String(), "{\n  \"view\"") {
		t.Fatalf("frequent view (periods read %d times): %s", read, &js)
	}
}

// TestRunRefusals: a database without value samples is named with the
// modules that make some; the caller's hint replaces that when the
// selection is at fault; the accuracy plot needs the truth and the
// latency view, and a load with truth.
func TestRunRefusals(t *testing.T) {
	ctx := context.Background()
	sym := symbolize.New(analysistest.Fleet())
	truth := map[string]*alpha.ValueTruth{"/bin/other": {PCs: map[uint64]*alpha.PCValues{}}}
	for _, c := range []struct {
		src  Source
		o    Options
		want string
	}{
		{listSource{}, Options{Where: "db"}, "db holds no value samples: profile with dcpi profile, dcpi node or dcpi demo --values MODULE (" + strings.Join(valuemod.Names(), ", ") + ")"},
		{listSource{}, Options{Where: "db", Hint: func() string { return "" }}, "db holds no value samples"},
		{listSource{}, Options{Where: "db", Hint: func() string { return "no epoch 9" }}, "no value samples selected: no epoch 9"},
		{sampled, Options{PlotFile: "a.svg"}, "--accuracy-plot needs --truth and the latency view"},
		{sampled, Options{Query: Query{View: Frequent, Truth: truth}, PlotFile: "a.svg"}, "--accuracy-plot needs --truth and the latency view"},
		{sampled, Options{Query: Query{Truth: truth}, PlotFile: "a.svg"}, "--accuracy-plot: no load in the selection has ground truth"},
	} {
		if _, err := Run(ctx, c.src, sym, c.o); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// TestRunAccuracyPlot: with the truth of the load, the plot has its one
// point, titled by its image, and prints its summary naming the file
// instead of the report; every row is read whatever the limit.
func TestRunAccuracyPlot(t *testing.T) {
	truth := map[string]*alpha.ValueTruth{"/bin/app": {PCs: map[uint64]*alpha.PCValues{
		analysistest.Base + 0x214: {Levels: [alpha.NumLevels]uint64{60, 10, 0, 30}}}}}
	o := Options{Query: Query{View: Latency, Truth: truth, Limit: 1, MinSamples: 1}, PlotFile: "a.svg",
		ReadPeriods: func(context.Context) (map[string]map[uint8]float64, error) { panic("the plot reads no periods") }}
	res, err := Run(context.Background(), sampled, symbolize.New(analysistest.Fleet()), o)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Plot
	if p == nil || len(p.Points) != 1 || p.Points[0].PC != analysistest.Base+0x214 || p.Points[0].Samples != 100 ||
		p.Title != "Load-latency shares against ground truth: /bin/app" || p.File != "a.svg" {
		t.Fatalf("plot: %+v", p)
	}
	var text, js, svg bytes.Buffer
	if err := res.WriteText(&text); err != nil || !strings.HasPrefix(text.String(), "1 loads with ground truth") || !strings.Contains(text.String(), "plot in a.svg") {
		t.Fatalf("text: %v\n%s", err, &text)
	}
	var back struct {
		Summary AccuracySummary
		Points  []AccuracyPoint
	}
	if err := res.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || back.Summary.Points != 1 || len(back.Points) != 1 {
		t.Fatalf("json: %v\n%s", err, &js)
	}
	if err := p.WriteSVG(&svg); err != nil || !strings.HasPrefix(svg.String(), "<svg") || !strings.Contains(svg.String(), "/bin/app") {
		t.Fatalf("svg: %v\n%.300s", err, &svg)
	}
}
