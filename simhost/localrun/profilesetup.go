package localrun

import (
	"io"

	"dcpi/config"
	"dcpi/conservation"
	"dcpi/simhost"
)

// ProfileOptions are dcpi profile's settings beyond the configuration
// and the flags ProfileConfig holds: the features its flags turn on, the
// programs' process labels (--proc-label), --no-stacks, whether --cpus
// and --values were given, and the programs' streams.
type ProfileOptions struct {
	Features           simhost.Features
	ProcLabels         map[string]string
	NoStacks           bool
	CPUsSet, ValuesSet bool
	Stdin              io.Reader
	Stdout, Stderr     io.Writer
}

// Setup completes c for dcpi profile's programs args under cfg: the
// programs (several separated by a lone ":"), one simulated CPU each
// unless --cpus says otherwise (at most 64), the machine with the
// programs installed and their streams, the node with cfg's labels,
// per-process images and process labels, the simulated seconds, and
// the conservation views the features need.
func (c *ProfileConfig) Setup(cfg config.Config, args []string, o ProfileOptions) error {
	progs, err := simhost.SplitPrograms(args)
	if err != nil {
		return err
	}
	if !o.CPUsSet {
		cfg.Sim.CPUs = min(len(progs), 64)
	}
	f := o.Features
	if !o.ValuesSet {
		f.Values = cfg.Node.Values
	}
	f.PerThread = cfg.Node.PerThread
	f.Labels, f.PerProcess, f.ProcessLabels = cfg.Node.Labels, cfg.Node.PerProcess, simhost.ProgramLabels(cfg.Node.ProcessLabelMap(), progs, o.ProcLabels)
	f.Stacks = f.Stacks && !o.NoStacks
	c.Programs, c.Seconds, c.Values = progs, cfg.Node.Seconds, f.Values != ""
	c.Views = conservation.Views{Stacks: f.Stacks, ProfileMe: f.ProfileMe}
	if c.Machine, err = simhost.MachineConfig(cfg.Sim); err != nil {
		return err
	}
	c.Machine.Stdin, c.Machine.Stdout, c.Machine.Stderr = o.Stdin, o.Stdout, o.Stderr
	c.Machine.GroundTruth = c.TruthFile != "" || c.ValuesTruthFile != ""
	simhost.InstallPrograms(&c.Machine, progs)
	c.Node, err = f.NodeConfig(cfg.Sim.Hostname, cfg.Node.FlushEvery, c.Machine.ClockHz)
	return err
}
