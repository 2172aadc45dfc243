package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/hwsim"
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
	evs, err := hwsim.ParsePICEvents(s)
	if err != nil {
		return fmt.Errorf("--%s: %w", picFlag, err)
	}
	hc.PICEvents = evs
	return hc.Validate()
}
