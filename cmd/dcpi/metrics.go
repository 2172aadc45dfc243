package main

import (
	"dcpi/cluster"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addMetricsFlag adds --metrics to a server role.
func addMetricsFlag(f *pflag.FlagSet, def string) {
	f.String("metrics", def, "serve Prometheus metrics (/metrics), /healthz and /readyz at this host:port (port 0: any; docs/metrics.md)")
}

// startRoleTelemetry starts the endpoint a role's --metrics flag asks for
// and, when one is served and logf is not nil, logs where.
func startRoleTelemetry(cmd *cobra.Command, logf func(string, ...any)) (*cluster.Telemetry, error) {
	addr, _ := cmd.Flags().GetString("metrics")
	t, err := cluster.StartTelemetry(addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	if u := t.URL(); u != "" && logf != nil {
		logf("metrics at %s/metrics, readiness at %s/readyz", u, u)
	}
	return t, nil
}
