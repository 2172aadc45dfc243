// Package cluster starts and stops a whole profiling cluster: the NATS
// server with JetStream and the cluster's credentials, the coordinator's
// Raft replicas over their Pebble databases, the aggregators, and node
// agents on simulated hosts. It is where a sample's journey through the
// cluster is wired (docs/architecture.md): a host's driver and daemon
// publish batches (StartHost), the aggregators merge and propose them
// (StartAggregator), the replicas apply them, and the conservation check
// (WaitStored, Conservation) says whether every sample the simulated
// hardware generated was stored once or counted as dropped.
//
// Each role is wired once, from a config, and used the same way by
// dcpi demo (Start: every role in one process), by the role commands
// (dcpi aggregator, dcpi node --nats), by the cluster tests
// (cluster/clustertest) and, as processes of the dcpi binary, by loadgen
// (StartProcesses). It parses no flags and prints nothing: callers get
// values and errors, and a *progress.Progress says on a terminal what a
// long wait waits for.
package cluster

import (
	"fmt"
	"log/slog"
)

// logf adapts a logger to the printf-style function the role packages
// take; a nil logger discards.
func logf(l *slog.Logger) func(string, ...any) {
	if l == nil {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) { l.Info(fmt.Sprintf(format, args...)) }
}
