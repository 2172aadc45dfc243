package calc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"dcpi/analysis"
	"dcpi/hwsim/alpha"
)

// TestOptionsCheck: dcpi calc's choices of procedures and output are
// refused when they contradict each other, whatever the data.
func TestOptionsCheck(t *testing.T) {
	names := Query{Procedures: []string{"main"}, Top: 1}
	for _, c := range []struct {
		o    Options
		want string // "": accepted
	}{
		{Options{Query: Query{Top: 1}}, ""},
		{Options{Query: names}, ""},
		{Options{Query: Query{Top: 1, All: true}}, ""},
		{Options{Query: Query{Top: 3}, TopGiven: true}, ""},
		{Options{Query: Query{Top: 1}, TruthFile: "t", Summary: false}, ""},
		{Options{Query: Query{Top: -1}}, "--top -1: want a number of procedures >= 1"},
		{Options{Query: names, TopGiven: true}, "give procedure names, --top or --all, not several"},
		{Options{Query: Query{Procedures: []string{"main"}, All: true}}, "give procedure names, --top or --all, not several"},
		{Options{Query: Query{Top: 2, All: true}, TopGiven: true}, "give --top or --all, not both"},
		{Options{Query: Query{Top: 0}, TopGiven: true}, "--top 0: want a number of procedures >= 1 (--all: every procedure)"},
		{Options{Query: Query{Top: 1}, TruthFile: "t", Summary: true}, "--truth prints an accuracy report instead of the listing and summaries: --summary does not apply"},
	} {
		err := c.o.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if CheckEvents(nil) != nil || CheckEvents([]uint8{uint8(alpha.EvIMiss)}) == nil {
		t.Errorf("CheckEvents: no events are fine, any is refused")
	}
}

// TestAnalyze: the procedures chosen (the default top 1 when none is
// named, the names alone when some are), the periods read, the summary
// kept for the printing, and the hint added to the errors of reading the
// periods and of the query but not to the truth's.
func TestAnalyze(t *testing.T) {
	src, _ := sortSource(t) // insertion, quick, main by samples
	periods := calcPeriodsOf(map[string]float64{"alpha": 1, "beta": 1})
	read := func(context.Context) (map[string]map[uint8]float64, error) { return periods, nil }
	hint := func() string { return "the hint" }
	procs := func(out *Output) string {
		var got []string
		for _, p := range out.Report.Procedures {
			got = append(got, p.Procedure)
		}
		return strings.Join(got, ",")
	}
	ctx := context.Background()
	out, err := Analyze(ctx, src, Options{Query: Query{Files: embeddedFinder{}}, ReadPeriods: read, Hint: hint})
	if err != nil || procs(out) != "insertion" || out.Accuracy != nil {
		t.Fatalf("default top 1: %v %+v", err, out)
	}
	out, err = Analyze(ctx, src, Options{Query: Query{Procedures: []string{"quick", "main"}, Top: 1, Files: embeddedFinder{}}, ReadPeriods: read, Summary: true})
	if err != nil || procs(out) != "quick,main" || !out.Summary {
		t.Fatalf("names with the default top: %v %+v", err, out)
	}
	var text, js bytes.Buffer
	if err := out.WriteText(&text); err != nil || strings.Contains(text.String(), "*** Block") || strings.Count(text.String(), "\nProcedure ") != 2 {
		t.Fatalf("summary text: %v\n%s", err, &text)
	}
	var back struct{ Procedures []struct{ Procedure string } }
	if err := out.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || len(back.Procedures) != 2 {
		t.Fatalf("json: %v\n%s", err, &js)
	}

	_, err = Analyze(ctx, src, Options{Query: Query{Top: 1, Files: embeddedFinder{}}, Hint: hint,
		ReadPeriods: func(context.Context) (map[string]map[uint8]float64, error) { return nil, errors.New("no registry") }})
	if err == nil || err.Error() != "no registry; the hint" {
		t.Errorf("periods error: %v", err)
	}
	_, err = Analyze(ctx, src, Options{Query: Query{Procedures: []string{"nosuch"}, Files: embeddedFinder{}}, ReadPeriods: read, Hint: hint})
	if !errors.Is(err, analysis.ErrQuery) || !strings.HasSuffix(err.Error(), "; the hint") {
		t.Errorf("query error: %v", err)
	}
	_, err = Analyze(ctx, src, Options{Query: Query{Procedures: []string{"nosuch"}, Files: embeddedFinder{}}, ReadPeriods: read,
		Hint: func() string { return "" }})
	if err == nil || strings.HasSuffix(err.Error(), "; ") {
		t.Errorf("query error with an empty hint: %v", err)
	}
	if _, err := Analyze(ctx, src, Options{Query: Query{Top: 1, Files: embeddedFinder{}}}); !errors.Is(err, analysis.ErrQuery) {
		t.Errorf("no ReadPeriods: %v", err)
	}
	if _, err := Analyze(ctx, src, Options{Query: Query{Top: -1}, ReadPeriods: read}); err == nil || !strings.HasPrefix(err.Error(), "--top -1") {
		t.Errorf("Analyze checks: %v", err)
	}
	_, err = Analyze(ctx, src, Options{Query: Query{Files: embeddedFinder{}}, ReadPeriods: read, Hint: hint,
		Truth: map[string]*alpha.GroundTruth{"/bin/other": {}}, TruthFile: "t.truth"})
	if err == nil || !strings.HasPrefix(err.Error(), "--truth t.truth: ") || strings.Contains(err.Error(), "the hint") {
		t.Errorf("truth of another program: %v", err)
	}
}

// TestOutputPrintsAccuracy: with an accuracy report, the output is that
// report, in text and in JSON, not the listing.
func TestOutputPrintsAccuracy(t *testing.T) {
	out := &Output{Report: &Report{}, Accuracy: &ReportAccuracy{Procedures: 1, Samples: 10}}
	var text, js bytes.Buffer
	if err := out.WriteText(&text); err != nil || !strings.HasPrefix(text.String(), "dcpicalc against the ground truth: 1 procedure, 10 CYCLES samples") {
		t.Fatalf("text: %v\n%s", err, &text)
	}
	var back ReportAccuracyJSON
	if err := out.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || back.Procedures != 1 || back.Samples != 10 {
		t.Fatalf("json: %v\n%s", err, &js)
	}
}
