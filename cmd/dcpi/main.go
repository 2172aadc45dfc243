// Command dcpi is the one binary of the project: a subcommand per role
// (sim, node, aggregator, coordinator, demo) and per analysis tool.
package main

import (
	"fmt"
	"os"
)

func main() {
	root := newRootCommand()
	if err := root.Execute(); err != nil {
		var exit exitError
		if asExit(err, &exit) {
			os.Exit(exit.code)
		}
		fmt.Fprintln(os.Stderr, "dcpi:", err)
		os.Exit(1)
	}
}
