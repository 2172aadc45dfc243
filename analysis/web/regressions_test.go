package web

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"dcpi/analysis/regress"
	"dcpi/analysis/regress/regresstest"
	"dcpi/storage"
)

// regressBackend is the test backend over the regression fleet: its
// epochs with their states, and epoch=N as a filter.
type regressBackend struct {
	*testBackend
	epochs []Epoch
}

func (b *regressBackend) Epochs(context.Context) ([]Epoch, error) { return b.epochs, nil }

func (b *regressBackend) Select(ctx context.Context, f Filters) (Selection, error) {
	es := f.Epochs
	f.Epochs = nil
	sel, err := b.testBackend.Select(ctx, f)
	for _, e := range es {
		n, perr := strconv.ParseUint(e, 10, 64)
		if perr != nil {
			return sel, perr
		}
		sel.Filter.Epochs = append(sel.Filter.Epochs, n)
	}
	return sel, err
}

func newRegressBackend(epochs []regresstest.Epoch) *regressBackend {
	src, meta := regresstest.Mem(epochs)
	b := &regressBackend{testBackend: &testBackend{src: src, hosts: []string{"alpha"}}}
	for _, e := range meta {
		b.epochs = append(b.epochs, Epoch{Number: e.Number, State: e.State.String()})
	}
	return b
}

var findingRE = regexp.MustCompile(`data-image="([^"]*)" data-proc="([^"]*)" data-direction="([^"]*)">\s*<td[^>]*>[^<]*</td><td class="num">([-0-9.]+)</td>`)

// TestRegressionsPage: the page shows regress.Evaluate's findings for the
// newest sealed epoch (not the open one after it), in its order with its
// z-scores, bounded by top; an older epoch by epoch=N; a page with
// nothing sealed or nothing found says so; bad options are a 400.
func TestRegressionsPage(t *testing.T) {
	jump := regresstest.Epoch{State: storage.EpochSealed, Steady: 5000, Jumpy: 3000, Tiny: 2, Memcpy: 4000}
	open := regresstest.Epoch{State: storage.EpochOpen, Steady: 10, Jumpy: 9000}
	epochs := append(regresstest.Steady(7), jump, open)
	b := newRegressBackend(epochs)
	s := New(b, t.Logf)
	want, err := regress.Evaluate(t.Context(), b.src, must(b.storageEpochs()), regress.Query{Options: regress.Options{Baseline: 6, Top: 3, Z: 3, MinSamples: 100}})
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, s, "/regressions?top=3")
	rows := findingRE.FindAllStringSubmatch(body, -1)
	if code != 200 || len(rows) != 3 || want.Epoch != 8 {
		t.Fatalf("status %d, %d rows (want 3 of epoch 8, evaluated %d)\n%s", code, len(rows), want.Epoch, body)
	}
	for i, r := range rows {
		w := want.Findings[i]
		if r[1] != w.Image || r[2] != w.Procedure || r[3] != string(w.Direction) || r[4] != strconv.FormatFloat(w.Z, 'f', 2, 64) {
			t.Errorf("row %d: %q; Evaluate: %+v", i, r[1:], w)
		}
	}
	if !strings.Contains(body, "epoch 8 (") || !strings.Contains(body, "epochs 2-7") || !strings.Contains(body, `href="/diff?a=epochs%3D2-7&amp;b=epoch%3D8"`) ||
		!strings.Contains(body, `id="nav-regressions"`) {
		t.Errorf("page header or links missing:\n%s", body)
	}
	for _, c := range []struct {
		url, want string
		code      int
	}{
		{"/regressions?epoch=4", "No significant change in share in epoch 4 against epochs 1-3.", 200},
		{"/regressions?epoch=1", "Epoch 1 is the first sealed epoch", 200},
		{"/regressions?epoch=9", "epoch not sealed: epoch 9 (open)", 400},
		{"/regressions?epoch=4&epoch=5", "give one epoch", 400},
		{"/regressions?baseline=0", "baseline=&#34;0&#34;: want a whole number &gt;= 1", 400},
		{"/regressions?top=0", "top=&#34;0&#34;: want a whole number &gt;= 1", 400},
		{"/regressions?z=-3", "z=&#34;-3&#34;: want a number from", 400},
	} {
		code, body := get(t, s, c.url)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d, want %d and %q\n%s", c.url, code, c.code, c.want, body)
		}
	}
	if _, body := get(t, s, "/regressions?epoch=1"); strings.Contains(body, `id="regressions"`) {
		t.Error("the first sealed epoch: a table of nothing")
	}
	none := New(newRegressBackend([]regresstest.Epoch{open}), t.Logf)
	if code, body := get(t, none, "/regressions"); code != 200 || !strings.Contains(body, "No sealed epoch yet") {
		t.Errorf("nothing sealed: %d\n%s", code, body)
	}
}

func (b *regressBackend) storageEpochs() ([]storage.Epoch, error) {
	var out []storage.Epoch
	for _, e := range b.epochs {
		st := storage.EpochOpen
		if e.State == "sealed" {
			st = storage.EpochSealed
		}
		out = append(out, storage.Epoch{Number: e.Number, State: st})
	}
	return out, nil
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
