package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"dcpi/analysis"
	"dcpi/analysis/regress"
	"dcpi/analysis/regress/regresstest"
	"dcpi/coordinator"
	"dcpi/storage"
)

// fakeEpochs is a watch's source in memory: the regression fleet's
// samples and an epoch list the test extends, counting the reads.
type fakeEpochs struct {
	*analysis.MemSource
	mu     sync.Mutex
	epochs []regresstest.Epoch
	fail   error
}

func (f *fakeEpochs) Epochs(context.Context) ([]coordinator.EpochInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	_, meta := regresstest.Records(f.epochs)
	out := make([]coordinator.EpochInfo, len(meta))
	for i, e := range meta {
		out[i] = coordinator.EpochInfo{Epoch: e}
	}
	return out, nil
}

// set replaces the epochs and the samples behind them.
func (f *fakeEpochs) set(epochs []regresstest.Epoch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epochs = epochs
	f.MemSource, _ = regresstest.Mem(epochs)
}

// series are the z-score series a scrape of w shows, as "image procedure
// direction", sorted; and the other figures by name.
func scrape(t *testing.T, w *RegressionWatch) (series []string, figures map[string]float64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(w); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	figures = map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() != "dcpi_regression_share_change_zscore" {
				figures[mf.GetName()] = value(m)
				continue
			}
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			series = append(series, strings.Join(strings.Fields(l["image"]+" "+l["procedure"]+" "+l["direction"]), " "))
		}
	}
	slices.Sort(series)
	return series, figures
}

func value(m *dto.Metric) float64 {
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// TestRegressionWatch: each sealed epoch is evaluated exactly once, an
// open one never; the z-score series are the newest evaluation's
// findings, at most top of them, and a finding not found again
// disappears.
func TestRegressionWatch(t *testing.T) {
	ctx := context.Background()
	sealed, open := storage.EpochSealed, storage.EpochOpen
	steady := regresstest.Epoch{State: sealed, Steady: 5000, Jumpy: 1000, Tiny: 2, Memcpy: 4000}
	jump := regresstest.Epoch{State: sealed, Steady: 5000, Jumpy: 3000, Tiny: 2, Memcpy: 4000}
	libcJump := regresstest.Epoch{State: sealed, Steady: 5000, Jumpy: 3000, Tiny: 2, Memcpy: 9000}
	opening := func(e regresstest.Epoch) regresstest.Epoch { e.State = open; return e }
	src := &fakeEpochs{}
	src.set(append(regresstest.Steady(3), opening(jump)))
	w, err := NewRegressionWatch(src, regress.Options{Baseline: 1, Top: 3, Z: 3, MinSamples: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Ready() == nil {
		t.Error("ready before a poll")
	}
	for i, step := range []struct {
		name      string
		epochs    []regresstest.Epoch
		evaluated []uint64
		series    []string
		findings  float64
	}{
		{"first look: the newest sealed, not the open one", append(regresstest.Steady(3), opening(jump)), []uint64{3}, nil, 0},
		{"nothing new sealed", append(regresstest.Steady(3), opening(jump)), nil, nil, 0},
		{"the jump sealed", append(regresstest.Steady(3), jump, opening(steady)), []uint64{4},
			[]string{"/bin/app jumpy increase", "/bin/app steady decrease", "/lib/libc decrease"}, 5},
		{"the same list again: not evaluated twice", append(regresstest.Steady(3), jump, opening(steady)), nil,
			[]string{"/bin/app jumpy increase", "/bin/app steady decrease", "/lib/libc decrease"}, 5},
		{"libc's jump: the old series go", append(regresstest.Steady(3), jump, libcJump, opening(steady)), []uint64{5},
			[]string{"/bin/app decrease", "/lib/libc increase", "/lib/libc memcpy increase"}, 5},
		{"two sealed at once: both, in order; nothing found", append(regresstest.Steady(3), jump, libcJump, libcJump, libcJump, opening(steady)),
			[]uint64{6, 7}, nil, 0},
	} {
		src.set(step.epochs)
		evs, err := w.Poll(ctx)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var got []uint64
		for _, ev := range evs {
			got = append(got, ev.Epoch)
		}
		series, figs := scrape(t, w)
		if !slices.Equal(got, step.evaluated) || !slices.Equal(series, step.series) || figs["dcpi_regression_findings"] != step.findings {
			t.Errorf("step %d, %s: evaluated %v, series %q, %v findings; want %v, %q, %v", i, step.name, got, series,
				figs["dcpi_regression_findings"], step.evaluated, step.series, step.findings)
		}
		if len(series) > 3 {
			t.Errorf("step %d: %d series; top is 3", i, len(series))
		}
	}
	_, figs := scrape(t, w)
	if figs["dcpi_regression_evaluations_total"] != 5 || figs["dcpi_regression_last_epoch"] != 7 || figs["dcpi_regression_failures_total"] != 0 {
		t.Errorf("figures %v; want 5 evaluations, last epoch 7, no failures", figs)
	}
	if w.Ready() != nil {
		t.Error("not ready after a poll")
	}
	src.fail = errors.New("no responders")
	if _, err := w.Poll(ctx); err == nil {
		t.Error("a failed read of the epochs: no error")
	}
	if _, figs := scrape(t, w); figs["dcpi_regression_failures_total"] != 1 || figs["dcpi_regression_evaluations_total"] != 5 {
		t.Errorf("after a failed poll: %v", figs)
	}
}

// TestParseRegressionWatch: the SPEC's keys set the options; bad values
// (a baseline or top below 1, a z that is not positive, an unknown key)
// are refused with regress.ErrOption.
func TestParseRegressionWatch(t *testing.T) {
	c, err := ParseRegressionWatch("baseline=3, top=5,z=4.5,min=10,every=1m,event=imiss")
	if err != nil || c.Baseline != 3 || c.Top != 5 || c.Z != 4.5 || c.MinSamples != 10 || c.Every.Minutes() != 1 || c.Event == 0 {
		t.Errorf("got %+v, %v", c, err)
	}
	if c, err := ParseRegressionWatch("on"); err != nil || c.Options != regress.DefaultOptions() || c.Every != DefaultWatchEvery {
		t.Errorf("on: %+v, %v", c, err)
	}
	for _, spec := range []string{"baseline=0", "top=0", "z=-3", "z=0", "z=NaN", "min=-1", "every=0s", "every=x", "event=nope", "k=1", "off", ""} {
		if _, err := ParseRegressionWatch(spec); !errors.Is(err, regress.ErrOption) {
			t.Errorf("%q: %v; want ErrOption", spec, err)
		}
	}
	if _, err := WatchRegressions(context.Background(), &fakeEpochs{}, "", "127.0.0.1:0", nil); err == nil {
		t.Error("--metrics without --watch: no error")
	}
}

// TestRegressionMetricsDocumented: every metric of the watch has its row
// in docs/metrics.md, with its type, labels and help as exported, and
// the scrape passes promlint.
func TestRegressionMetricsDocumented(t *testing.T) {
	src := &fakeEpochs{}
	src.set(append(regresstest.Steady(3), regresstest.Epoch{State: storage.EpochSealed, Steady: 5000, Jumpy: 3000, Memcpy: 4000}))
	w, err := NewRegressionWatch(src, regress.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(w)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %v", problems, err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		var labels []string
		for _, p := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, p.GetName())
		}
		row := "| `" + mf.GetName() + "` | " + strings.ToLower(mf.GetType().String()) + " | " + strings.Join(labels, ", ") + " | " + mf.GetHelp() + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/metrics.md has no row\n%s", row)
		}
	}
}
