package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Desc is one metric family a collector reports from values it reads at
// scrape time: a name, help text, variable labels and a type.
type Desc struct {
	d   *prometheus.Desc
	typ prometheus.ValueType
}

// Counter describes a counter: name ends in _total by Prometheus's
// conventions, and the value only grows over the life of what it counts.
func Counter(name, help string, labels ...string) Desc {
	return Desc{d: prometheus.NewDesc(name, help, labels, nil), typ: prometheus.CounterValue}
}

// Gauge describes a gauge: a value that goes up and down.
func Gauge(name, help string, labels ...string) Desc {
	return Desc{d: prometheus.NewDesc(name, help, labels, nil), typ: prometheus.GaugeValue}
}

// Desc returns the client_golang descriptor.
func (d Desc) Desc() *prometheus.Desc { return d.d }

// Emit sends one sample of d with the label values in the order d's labels
// were given. A wrong number of label values is a bug in the collector,
// not input, so it panics as client_golang's MustNewConstMetric does.
func (d Desc) Emit(ch chan<- prometheus.Metric, v float64, labelValues ...string) {
	ch <- prometheus.MustNewConstMetric(d.d, d.typ, v, labelValues...)
}

// Descs is a collector's families, for its Describe.
type Descs []Desc

// Describe sends every descriptor.
func (ds Descs) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range ds {
		ch <- d.d
	}
}

// LatencyBuckets are the histogram buckets, in seconds, for the latencies
// of the cluster's requests: 100 µs (a query served from the page cache) to
// 10 s (a Raft proposal's timeout).
var LatencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// NewRegistry is a process's registry, with the Go runtime's and the
// process's own collectors (dcpi's roles run in one process or many).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// EmitCounts sends one sample of d (a family with one label) per name in
// counts, labelled with the name, and a zero for each name of always that
// counts lacks: a counter's series should exist before its first
// increment, so that rate() and alerts see it start.
func (d Desc) EmitCounts(ch chan<- prometheus.Metric, counts map[string]uint64, always ...string) {
	for name, v := range counts {
		d.Emit(ch, float64(v), name)
	}
	for _, name := range always {
		if _, ok := counts[name]; !ok {
			d.Emit(ch, 0, name)
		}
	}
}
