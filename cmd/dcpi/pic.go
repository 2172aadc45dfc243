package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// picFlag is --pic: the two events hwsim's rdpic PAL call returns to
// instrumented programs (docs/hwsim.md, "rdpic").
const picFlag = "pic"

func addPICFlag(cmd *cobra.Command) {
	d := hwsim.DefaultPICEvents
	cmd.Flags().String(picFlag, d[0].String()+","+d[1].String(),
		"the two events `A,B` the rdpic PAL call returns to instrumented programs (docs/hwsim.md)")
}

// applyPICFlag sets hc.PICEvents from --pic.
func applyPICFlag(cmd *cobra.Command, hc *hwsim.Config) error {
	s, err := cmd.Flags().GetString(picFlag)
	if err != nil {
		return err
	}
	evs, err := parsePICEvents(s)
	if err != nil {
		return fmt.Errorf("--%s: %w", picFlag, err)
	}
	hc.PICEvents = evs
	return hc.Validate()
}

// parsePICEvents parses "A,B", two event names.
func parsePICEvents(s string) ([]alpha.Event, error) {
	names := strings.Split(s, ",")
	if len(names) != 2 {
		return nil, fmt.Errorf("%q: want two events, A,B", s)
	}
	out := make([]alpha.Event, 2)
	for i, n := range names {
		e, err := alpha.EventByName(strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}
