// Package telemetry serves a process's Prometheus metrics and health: one
// registry per process (never client_golang's global one), an HTTP server
// with /metrics, /healthz (the process is alive) and /readyz (every role
// in it says it is ready), and the small helpers the roles' collectors
// share to report, at scrape time, counters they already keep.
//
// It owns the endpoints and the readiness rule, not the metrics: each
// role's package (node, simhost, transport, aggregator, coordinator,
// storage) defines its own collector; cmd/dcpi registers them.
package telemetry
