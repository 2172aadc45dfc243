package trend

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"dcpi/analysis"
	"dcpi/storage"
	"dcpi/wire"
)

var (
	imageA = wire.ImageKey{1}
	imageB = wire.ImageKey{2}
)

func at(h, m int) time.Time { return time.Date(2026, 11, 20, h, m, 0, 0, time.UTC) }

// known is a profile of three epochs with chosen counts: epoch 1
// (08:00-08:10) has hot 300 and main 100 in /bin/a, lookup 200 and main
// 50 in /bin/b; epoch 2 (08:10-08:20) nothing; epoch 3 (open since
// 08:20, now 08:25) hot 60 and main 30 in /bin/a. Event 2 (imiss) has
// samples that a cycles trend must not count.
func known() (*analysis.MemSource, []Epoch) {
	m := analysis.NewMemSource()
	m.PutImage(&wire.ImageRecord{Version: wire.Version, Key: imageA, Path: "/bin/a",
		Symbols: []wire.Symbol{{Name: "main", Addr: 0, Size: 0x100}, {Name: "hot", Addr: 0x100, Size: 0x100}}})
	m.PutImage(&wire.ImageRecord{Version: wire.Version, Key: imageB, Path: "/bin/b",
		Symbols: []wire.Symbol{{Name: "main", Addr: 0, Size: 0x100}, {Name: "lookup", Addr: 0x100, Size: 0x100}}})
	add := func(epoch uint64, im wire.ImageKey, off, n uint64, host string) {
		m.Add(storage.Record{Epoch: epoch, Image: im, Offset: off, Host: host, Count: n})
	}
	// Split across two hosts and offsets, so sums are sums.
	add(1, imageA, 0x110, 200, "h0")
	add(1, imageA, 0x120, 100, "h1")
	add(1, imageA, 0x10, 100, "h0")
	add(1, imageB, 0x100, 200, "h1")
	add(1, imageB, 0x0, 50, "h0")
	add(3, imageA, 0x100, 60, "h0")
	add(3, imageA, 0x0, 30, "h1")
	m.Add(storage.Record{Epoch: 1, Event: 2, Image: imageA, Offset: 0x100, Host: "h0", Count: 999})
	eps := []Epoch{
		{Number: 1, Start: at(8, 0), End: at(8, 10)},
		{Number: 2, Start: at(8, 10), End: at(8, 20)},
		{Number: 3, Start: at(8, 20), End: at(8, 25), Open: true},
	}
	return m, eps
}

func samples(s Series) []uint64 {
	var out []uint64
	for _, p := range s.Points {
		out = append(out, p.Samples)
	}
	return out
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestKnownEpochs: each measure's samples per epoch are the counts put
// in, the empty epoch is a row of zeros (not missing), shares are of the
// epoch's selection and rates of the epoch's length.
func TestKnownEpochs(t *testing.T) {
	src, eps := known()
	ctx := context.Background()
	ms := []Measure{{Kind: KindProcedure, Value: "hot"}, {Kind: KindProcedure, Value: "main"}, {Kind: KindImage, Value: "b"},
		{Kind: KindProcedure, Value: "main", Image: "/bin/b"}, {Kind: KindImage, Value: imageA.String()}, {Kind: KindSelection}}
	tr, err := Run(ctx, src, Query{Epochs: eps, Measures: ms})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]uint64{{300, 0, 60}, {150, 0, 30}, {250, 0, 0}, {50, 0, 0}, {400, 0, 90}, {650, 0, 90}}
	for i, s := range tr.Series {
		if !equal(samples(s), want[i]) {
			t.Errorf("%s: samples %v, want %v", s.Measure, samples(s), want[i])
		}
	}
	if !equal(samples(tr.Total), []uint64{650, 0, 90}) || tr.Total.Samples != 740 {
		t.Errorf("total %v (%d), want [650 0 90] (740)", samples(tr.Total), tr.Total.Samples)
	}
	hot := tr.Series[0]
	for i, want := range []Point{{300, 100 * 300.0 / 650, 300.0 / 600}, {0, 0, 0}, {60, 100 * 60.0 / 90, 60.0 / 300}} {
		p := hot.Points[i]
		if p.Samples != want.Samples || math.Abs(p.Share-want.Share) > 1e-9 || math.Abs(float64(p.Rate-want.Rate)) > 1e-9 {
			t.Errorf("hot, epoch %d: %+v, want %+v", eps[i].Number, p, want)
		}
	}
	if math.Abs(hot.Share-100*360.0/740) > 1e-9 {
		t.Errorf("hot's share over the range %.4f, want %.4f", hot.Share, 100*360.0/740)
	}
	// Host and image filters narrow every epoch alike.
	tr, err = Run(ctx, src, Query{Epochs: eps, Measures: ms[:1], Filter: storage.Query{Hosts: []string{"h1"}}})
	if err != nil || !equal(samples(tr.Series[0]), []uint64{100, 0, 0}) || !equal(samples(tr.Total), []uint64{300, 0, 30}) {
		t.Errorf("host h1: %v, %v (%v)", samples(tr.Series[0]), samples(tr.Total), err)
	}
	// Another event counts its own samples.
	tr, err = Run(ctx, src, Query{Epochs: eps, Measures: ms[:1], Event: 2})
	if err != nil || !equal(samples(tr.Series[0]), []uint64{999, 0, 0}) || tr.Event != "imiss" {
		t.Errorf("imiss: %v %s (%v)", samples(tr.Series[0]), tr.Event, err)
	}
}

// TestTopSharesSum: without measures, the top procedures by samples over
// the range, in order; with every procedure among them, each epoch's
// shares sum to 100 (0 in the empty epoch) and the samples to the total.
func TestTopSharesSum(t *testing.T) {
	src, eps := known()
	tr, err := Run(context.Background(), src, Query{Epochs: eps, Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Series) != 2 || tr.Series[0].Measure != (Measure{Kind: KindProcedure, Value: "hot", Image: "/bin/a"}) ||
		tr.Series[1].Measure != (Measure{Kind: KindProcedure, Value: "lookup", Image: "/bin/b"}) {
		t.Fatalf("top 2: %+v", tr.Series)
	}
	tr, err = Run(context.Background(), src, Query{Epochs: eps, Top: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Series) != 4 {
		t.Fatalf("%d procedures, want 4", len(tr.Series))
	}
	for i := range eps {
		var share float64
		var n uint64
		for _, s := range tr.Series {
			share += s.Points[i].Share
			n += s.Points[i].Samples
		}
		wantShare := 100.0
		if tr.Total.Points[i].Samples == 0 {
			wantShare = 0
		}
		if math.Abs(share-wantShare) > 1e-9 || n != tr.Total.Points[i].Samples {
			t.Errorf("epoch %d: shares sum to %.6f, samples to %d; want %.0f, %d", eps[i].Number, share, n, wantShare, tr.Total.Points[i].Samples)
		}
	}
}

// TestSVG: the chart is well-formed XML with one path per series and
// one for the selection's total, with or without the epochs' times.
func TestSVG(t *testing.T) {
	src, eps := known()
	untimed := []Epoch{{Number: 1}, {Number: 2}, {Number: 3}}
	for _, c := range []struct {
		name string
		eps  []Epoch
		plot Plot
	}{{"timed", eps, PlotRate}, {"share", eps, PlotShare}, {"untimed", untimed, PlotRate}} {
		tr, err := Run(context.Background(), src, Query{Epochs: c.eps, Top: 3})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := tr.WriteSVG(&b, c.plot); err != nil {
			t.Fatal(err)
		}
		paths, err := countPaths(b.String())
		if err != nil {
			t.Fatalf("%s: not well-formed XML: %v\n%s", c.name, err, b.String())
		}
		if paths != len(tr.Series)+1 {
			t.Errorf("%s: %d paths, want %d (a series each and the total)", c.name, paths, len(tr.Series)+1)
		}
	}
}

// countPaths parses doc as XML and counts its path elements.
func countPaths(doc string) (int, error) {
	d := xml.NewDecoder(strings.NewReader(doc))
	n := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			n++
		}
	}
}

// TestTextAndJSON: the table has a row per epoch per series, the empty
// epoch's zeros among them; JSON's rate is null where the epoch has no
// times.
func TestTextAndJSON(t *testing.T) {
	local := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = local })
	src, eps := known()
	tr, err := Run(context.Background(), src, Query{Epochs: eps, Measures: []Measure{{Kind: KindProcedure, Value: "hot"}}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tr.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Trend of cycles samples per epoch: epochs 1-3, 2026-11-20 08:00:00 to 08:25:00 UTC (epoch 3 open)",
		"procedure hot: 360 samples, 48.65% of the selection",
		"2 2026-11-20 08:10:00 08:20:00 600.0 0 0.00 0",
		"3 2026-11-20 08:20:00 open 300.0 60 66.67 0.2000",
		"1 2026-11-20 08:00:00 08:10:00 600.0 650 100.00 1.08",
	} {
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	tr, err = Run(context.Background(), src, Query{Epochs: []Epoch{{Number: 1}}, Measures: []Measure{{Kind: KindProcedure, Value: "hot"}}})
	if err != nil {
		t.Fatal(err)
	}
	var j strings.Builder
	if err := tr.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Series []struct {
			Points []struct {
				Samples uint64   `json:"samples"`
				Rate    *float64 `json:"rate_per_s"`
			} `json:"points"`
		} `json:"series"`
	}
	if err := json.Unmarshal([]byte(j.String()), &got); err != nil {
		t.Fatal(err)
	}
	if p := got.Series[0].Points[0]; p.Samples != 300 || p.Rate != nil {
		t.Errorf("untimed epoch: %+v, want 300 samples and a null rate\n%s", p, j.String())
	}
}

func TestParseMeasure(t *testing.T) {
	for in, want := range map[string]Measure{
		"":                {Kind: KindSelection},
		"selection":       {Kind: KindSelection},
		"procedure=main":  {Kind: KindProcedure, Value: "main"},
		"proc= lap ":      {Kind: KindProcedure, Value: "lap"},
		"image=/bin/sort": {Kind: KindImage, Value: "/bin/sort"},
	} {
		if m, err := ParseMeasure(in); err != nil || m != want {
			t.Errorf("%q: %+v, %v; want %+v", in, m, err, want)
		}
	}
	for _, in := range []string{"procedure=", "host=alpha0", "main", "image= "} {
		if _, err := ParseMeasure(in); !errors.Is(err, analysis.ErrQuery) {
			t.Errorf("%q: %v, want an ErrQuery", in, err)
		}
	}
	if _, err := Run(context.Background(), analysis.NewMemSource(), Query{Top: -1}); !errors.Is(err, analysis.ErrQuery) {
		t.Errorf("top -1: %v", err)
	}
}

// TestSelectEpochs: the named epochs in order, once each; every recorded
// one without names; an unrecorded one refused naming those recorded;
// without records, the named ones untimed.
func TestSelectEpochs(t *testing.T) {
	_, all := known()
	eps, err := SelectEpochs(all, []uint64{3, 1, 3})
	if err != nil || len(eps) != 2 || eps[0].Number != 1 || eps[1] != all[2] {
		t.Errorf("3,1,3: %+v, %v", eps, err)
	}
	if eps, err := SelectEpochs(all, nil); err != nil || len(eps) != 3 {
		t.Errorf("all: %+v, %v", eps, err)
	}
	if _, err := SelectEpochs(all, []uint64{9}); !errors.Is(err, analysis.ErrQuery) || err.Error() != "epoch 9 is not recorded; epochs 1-3 are" {
		t.Errorf("9: %v", err)
	}
	if _, err := SelectEpochs(nil, nil); !errors.Is(err, ErrNoEpochs) {
		t.Errorf("none recorded: %v", err)
	}
	if eps, err := SelectEpochs(nil, []uint64{4}); err != nil || len(eps) != 1 || eps[0] != (Epoch{Number: 4}) {
		t.Errorf("4 without records: %+v, %v", eps, err)
	}
}
