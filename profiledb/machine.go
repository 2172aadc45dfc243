package profiledb

import (
	"context"
	"dcpi/storage"
	"fmt"
	"strings"
)

// MachineLabel is the registry label naming a host's machine kind when
// it is not a simulated Alpha ("linux-amd64": dcpi profile --linux,
// package linuxhost). A simulated host has none. It is reserved
// (wire.ReservedLabels): the host sets it, not the user's labels, and
// selectors and --by read it like any label (machine=linux-amd64).
const MachineLabel = "machine"

// legacyMachineLabel is the name dcpi gave MachineLabel before it was a
// label a selector can name; databases written then still carry it.
const legacyMachineLabel = "dcpi.machine"

// machineOf is n's machine kind, "" for a simulated Alpha.
func machineOf(n storage.Node) string {
	if kind := n.Labels[MachineLabel]; kind != "" {
		return kind
	}
	return n.Labels[legacyMachineLabel]
}

// simulatedOnly names the tools that need the simulated machine, and why.
var simulatedOnly = map[string]string{
	"dcpi-calc":     "its stall analysis needs the simulated Alpha's pipeline model and per-instruction cycles",
	"dcpi-me":       "ProfileMe is simulated Alpha hardware",
	"dcpi-values":   "value sampling interprets simulated Alpha instructions at each interrupt",
	"dcpi-pp-fleet": "path profiles come from instrumented Alpha programs on simulated hosts",
}

// RefuseMachines fails, in one line, when tool needs the simulated machine
// and db holds a host of another kind; other tools pass.
func RefuseMachines(ctx context.Context, db DB, tool string) error {
	why, ok := simulatedOnly[tool]
	if !ok {
		return nil
	}
	nodes, err := db.Nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if kind := machineOf(n.Node); kind != "" {
			return fmt.Errorf("%s: host %s is a %s machine, not a simulated Alpha: %s (dcpi prof, list, stacks, pprof and web read its profile)",
				strings.TrimPrefix(tool, "dcpi-")+" refuses this profile", n.Host, kind, why)
		}
	}
	return nil
}
