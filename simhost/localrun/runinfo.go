package localrun

import (
	"dcpi/hwsim"
	"dcpi/simhost"
	"dcpi/storage"
)

// meIssueWidth is C, the issue slots a cycle both cores have (the 21164:
// two integer and two floating-point pipes; the 21264: four integer).
const meIssueWidth = 4

// RunInfo is the record of c's run the database keeps for the tools
// (storage.RunInfo): the model, the events, and ProfileMe's S and W as
// the hardware was programmed (W is the core's default unless given).
func RunInfo(c Config) storage.RunInfo {
	r := storage.RunInfo{Model: c.Machine.Model.Name, Stacks: c.Node.Node.Driver.Stacks.Entries > 0,
		Programs: []string{simhost.ProgramCommands(c.Programs)}}
	for _, spec := range c.Node.Profile.Counters {
		for _, e := range spec.Events {
			r.Events = append(r.Events, e.String())
		}
	}
	if c.Node.Node.Driver.Me.Entries > 0 {
		me := c.Node.ProfileMe
		if me.IntervalMax == 0 {
			me = hwsim.DefaultProfileMe()
		}
		r.MeInterval, r.MeIssueWidth = me.MeanInterval(), meIssueWidth
		r.MePairWindow = float64(me.PairWindow)
		if me.PairWindow == 0 {
			r.MePairWindow = float64(hwsim.DefaultPairWindow(c.Machine.Timing && c.Machine.Model.Implver >= 2))
		}
	}
	return r
}
