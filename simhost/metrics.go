package simhost

import (
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/internal/telemetry"
)

// The simulated machine's metrics: what the hardware did, the left side
// of the conservation identity (generated = stored + dropped). They are
// what Run last published (once per million simulated cycles), exact once
// Run has returned.
var (
	mGenerated = telemetry.Counter("dcpi_sim_samples_generated_total",
		"Counter interrupts the simulated hardware delivered on every CPU: the samples generated.")
	mSimSeconds = telemetry.Counter("dcpi_sim_simulated_seconds_total",
		"Simulated time the machine has run.")
	mRestarts = telemetry.Counter("dcpi_sim_program_restarts_total",
		"Times a kept-running program was started again after it exited.")
	simDescs = telemetry.Descs{mGenerated, mSimSeconds, mRestarts}
)

// Collector reports the simulated machine's metrics (the node's own are
// Node().Collector()).
func (h *Host) Collector() prometheus.Collector { return hostCollector{h, h.m.Config().ClockHz} }

type hostCollector struct {
	h       *Host
	clockHz uint64
}

func (c hostCollector) Describe(ch chan<- *prometheus.Desc) { simDescs.Describe(ch) }

func (c hostCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.h
	mGenerated.Emit(ch, float64(h.generated.Load()))
	mSimSeconds.Emit(ch, float64(h.SimCycles())/float64(c.clockHz))
	mRestarts.Emit(ch, float64(h.restarts.Load()))
}
