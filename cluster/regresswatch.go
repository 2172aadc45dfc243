package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dcpi/analysis"
	"dcpi/analysis/regress"
	"dcpi/coordinator"
	"dcpi/storage"
)

// DefaultWatchEvery is how often a regression watch reads the epoch list
// unless told: epochs are cut every few minutes to hours, so a sealed
// epoch is judged well within one scrape interval or two of sealing.
const DefaultWatchEvery = 30 * time.Second

// RegressionWatchConfig is a regression watch: how it compares (regress
// Options) and how often it looks for a newly sealed epoch.
type RegressionWatchConfig struct {
	regress.Options
	Every time.Duration
}

// ParseRegressionWatch parses a watch SPEC (dcpi web --watch): "on" for
// the defaults, or comma-separated KEY=VALUE of baseline (epochs), top
// (findings), z, min (samples), every (a duration) and event (a name).
func ParseRegressionWatch(spec string) (RegressionWatchConfig, error) {
	c := RegressionWatchConfig{Options: regress.DefaultOptions(), Every: DefaultWatchEvery}
	if spec = strings.TrimSpace(spec); spec == "on" {
		return c, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		var err error
		switch {
		case !ok:
			err = fmt.Errorf("want on, or KEY=VALUE of baseline, top, z, min, every, event")
		case k == "baseline":
			c.Baseline, err = strconv.Atoi(v)
		case k == "top":
			c.Top, err = strconv.Atoi(v)
		case k == "z":
			c.Z, err = strconv.ParseFloat(v, 64)
		case k == "min":
			c.MinSamples, err = strconv.ParseUint(v, 10, 64)
		case k == "every":
			if c.Every, err = time.ParseDuration(v); err == nil && c.Every <= 0 {
				err = fmt.Errorf("want a positive duration")
			}
		case k == "event":
			c.Event, err = analysis.ParseEvent(v)
		default:
			err = fmt.Errorf("unknown key %q (baseline, top, z, min, every, event)", k)
		}
		if err != nil {
			return c, fmt.Errorf("--watch %q: %w: %s: %v", spec, regress.ErrOption, strings.TrimSpace(kv), err)
		}
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("--watch %q: %w", spec, err)
	}
	return c, nil
}

// EpochSource is what a watch reads: the profile and the epoch list
// (profiledb.DB, local or the cluster's reader, has both).
type EpochSource interface {
	analysis.Source
	Epochs(ctx context.Context) ([]coordinator.EpochInfo, error)
}

// RegressionWatch follows the epochs and evaluates each newly sealed one
// once (regress.Due, regress.Evaluate), exporting the newest
// evaluation's findings as metrics. Poll is one step and has no
// goroutine of its own; Run polls on a period.
type RegressionWatch struct {
	src EpochSource
	opt regress.Options
	log *slog.Logger

	mu          sync.Mutex
	last        uint64 // newest epoch evaluated (0: none yet)
	latest      *regress.Evaluation
	evaluations uint64
	failures    uint64
	polled      bool // a poll has read the epochs: ready
}

// NewRegressionWatch is a watch over src; log (nil: discard) hears of
// each evaluation and failure.
func NewRegressionWatch(src EpochSource, opt regress.Options, log *slog.Logger) (*RegressionWatch, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &RegressionWatch{src: src, opt: opt, log: log}, nil
}

// Poll reads the epoch list and evaluates every epoch due, in order; the
// metrics then show the newest evaluation. It returns the evaluations
// made (none when no epoch was newly sealed). An evaluation that fails
// stops the poll and is tried again at the next one.
func (w *RegressionWatch) Poll(ctx context.Context) ([]*regress.Evaluation, error) {
	infos, err := w.src.Epochs(ctx)
	if err != nil {
		w.fail()
		return nil, fmt.Errorf("regression watch: reading the epochs: %w", err)
	}
	epochs := make([]storage.Epoch, len(infos))
	for i, e := range infos {
		epochs[i] = e.Epoch
	}
	w.mu.Lock()
	w.polled = true
	last := w.last
	w.mu.Unlock()
	var done []*regress.Evaluation
	for _, n := range regress.Due(epochs, last) {
		ev, err := regress.Evaluate(ctx, w.src, epochs, regress.Query{Epoch: n, Options: w.opt})
		if err != nil {
			w.fail()
			return done, fmt.Errorf("regression watch: %w", err)
		}
		w.mu.Lock()
		w.last, w.latest = n, ev
		w.evaluations++
		w.mu.Unlock()
		w.log.Info("regression watch: evaluated", "epoch", n, "baseline", ev.Baseline, "significant", ev.Significant,
			"exported", len(ev.Findings))
		done = append(done, ev)
	}
	return done, nil
}

func (w *RegressionWatch) fail() {
	w.mu.Lock()
	w.failures++
	w.mu.Unlock()
}

// Latest is the newest evaluation (nil before the first).
func (w *RegressionWatch) Latest() *regress.Evaluation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest
}

// Run polls now and then every period until ctx ends; a failed poll is
// logged, counted, and retried at the next.
func (w *RegressionWatch) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := w.Poll(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn(err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Ready is the watch's readiness condition: a poll has read the epochs.
func (w *RegressionWatch) Ready() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.polled {
		return fmt.Errorf("the epoch list not read yet")
	}
	return nil
}

// The watch's metrics (docs/metrics.md). The z-scores are the newest
// evaluation's findings only, so a change that is no longer found
// disappears at the next evaluation, and there are at most Top series.
var (
	regressZDesc = prometheus.NewDesc("dcpi_regression_share_change_zscore",
		"The newest evaluated epoch's significant changes in share against its baseline (dcpi diff's z-score; positive: the share grew), "+
			"the top by absolute z; procedure is empty for a whole image.",
		[]string{"image", "procedure", "direction"}, nil)
	regressEpochDesc = prometheus.NewDesc("dcpi_regression_last_epoch",
		"The newest sealed epoch the regression watch has evaluated (0: none yet).", nil, nil)
	regressEvalDesc = prometheus.NewDesc("dcpi_regression_evaluations_total",
		"Sealed epochs the regression watch has compared with their baseline, each once.", nil, nil)
	regressFindingsDesc = prometheus.NewDesc("dcpi_regression_findings",
		"Significant changes in share the newest evaluation found, above the samples floor, before the top bound.", nil, nil)
	regressFailDesc = prometheus.NewDesc("dcpi_regression_failures_total",
		"Polls of the regression watch that failed (the epoch list or the profile could not be read); retried at the next.", nil, nil)
)

// Describe implements prometheus.Collector.
func (w *RegressionWatch) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{regressZDesc, regressEpochDesc, regressEvalDesc, regressFindingsDesc, regressFailDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one consistent snapshot, so
// a scrape never sees an evaluation half exported.
func (w *RegressionWatch) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	ev, last, evals, fails := w.latest, w.last, w.evaluations, w.failures
	w.mu.Unlock()
	significant := 0
	if ev != nil {
		significant = ev.Significant
		for _, f := range ev.Findings {
			ch <- prometheus.MustNewConstMetric(regressZDesc, prometheus.GaugeValue, f.Z, f.Image, f.Procedure, string(f.Direction))
		}
	}
	ch <- prometheus.MustNewConstMetric(regressEpochDesc, prometheus.GaugeValue, float64(last))
	ch <- prometheus.MustNewConstMetric(regressEvalDesc, prometheus.CounterValue, float64(evals))
	ch <- prometheus.MustNewConstMetric(regressFindingsDesc, prometheus.GaugeValue, float64(significant))
	ch <- prometheus.MustNewConstMetric(regressFailDesc, prometheus.CounterValue, float64(fails))
}

// StartRegressionWatch runs a watch over src until ctx ends, its metrics
// registered on tel and its readiness among tel's conditions. stop ends
// it and waits.
func StartRegressionWatch(ctx context.Context, src EpochSource, cfg RegressionWatchConfig, tel *Telemetry, log *slog.Logger) (stop func(), err error) {
	w, err := NewRegressionWatch(src, cfg.Options, log)
	if err != nil {
		return nil, err
	}
	every := cfg.Every
	if every <= 0 {
		every = DefaultWatchEvery
	}
	if err := tel.Register(nil, w); err != nil {
		return nil, err
	}
	tel.Ready.Add("regression watch", w.Ready)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, every)
	}()
	return func() { cancel(); <-done }, nil
}

// WatchRegressions is dcpi web's --watch and --metrics: with a SPEC
// (ParseRegressionWatch; "" is no watch) it serves the process's metrics
// at metricsAddr ("" none) and runs a watch over src until ctx ends or
// stop. --metrics without a watch is refused: there would be nothing of
// the web's to serve.
func WatchRegressions(ctx context.Context, src EpochSource, spec, metricsAddr string, log *slog.Logger) (stop func(), err error) {
	if spec == "" {
		if metricsAddr != "" {
			return nil, fmt.Errorf("--metrics serves the regression watch's metrics: give --watch too (docs/alerts.md)")
		}
		return func() {}, nil
	}
	cfg, err := ParseRegressionWatch(spec)
	if err != nil {
		return nil, err
	}
	tel, err := StartTelemetry(metricsAddr)
	if err != nil {
		return nil, err
	}
	if u := tel.URL(); u != "" && log != nil {
		log.Info(fmt.Sprintf("metrics at %s/metrics, readiness at %s/readyz", u, u))
	}
	stopWatch, err := StartRegressionWatch(ctx, src, cfg, tel, log)
	if err != nil {
		tel.Close()
		return nil, err
	}
	return func() { stopWatch(); tel.Close() }, nil
}
