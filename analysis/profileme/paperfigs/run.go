package paperfigs

import (
	"fmt"
	"io"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
)

// MeRun is one workload run alone on a one-CPU simulated machine with
// ProfileMe on, its samples as the hardware delivered them, and the
// machine's ground truth of the workload's image (the reference an
// experiment checks the samples against; never a measurement itself).
type MeRun struct {
	Model    string
	Workload string
	Args     []string
	Me       hwsim.ProfileMeConfig
	Samples  []hwsim.MeSample
	Lost     uint64
	Truth    *alpha.GroundTruth
}

// meRunCollector keeps every sample delivered; the run's handler costs
// a fixed 100 cycles an interrupt (what the experiment's figures do not
// depend on).
type meRunCollector struct {
	samples []hwsim.MeSample
	lost    uint64
}

func (c *meRunCollector) ProfileMeInterrupt(_ int, s []hwsim.MeSample, lost uint64) uint64 {
	c.samples = append(c.samples, s...)
	c.lost += lost
	return 100
}

// RunMe runs workload (with args; nil for its defaults) on model with
// timing, ground truth and ProfileMe programmed by me.
func RunMe(model, workload string, args []string, me hwsim.ProfileMeConfig) (*MeRun, error) {
	mod, err := alpha.ModelByName(model)
	if err != nil {
		return nil, err
	}
	image, err := workloads.Binary(workload)
	if err != nil {
		return nil, err
	}
	if args == nil {
		for _, w := range workloads.All() {
			if w.Name == workload {
				args = w.DefaultArgs
			}
		}
	}
	path := "/bin/" + workload
	c := hwsim.DefaultConfig()
	c.CPUs, c.Model, c.Timing, c.GroundTruth = 1, mod, true, true
	c.Files = map[string][]byte{path: image}
	c.Stdout, c.Stderr = io.Discard, io.Discard
	m, err := hwsim.New(c)
	if err != nil {
		return nil, err
	}
	col := &meRunCollector{}
	if err := m.StartProfileMe(me, col); err != nil {
		return nil, err
	}
	if _, err := m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"}); err != nil {
		return nil, err
	}
	if m.Run(400_000_000_000) {
		return nil, fmt.Errorf("paperfigs: %s did not finish", workload)
	}
	m.FlushProfileMe()
	truth := m.GroundTruth()[path]
	if truth == nil || len(truth.PCs) == 0 {
		return nil, fmt.Errorf("paperfigs: no ground truth for %s", path)
	}
	return &MeRun{Model: model, Workload: workload, Args: args, Me: me, Samples: col.samples, Lost: col.lost, Truth: truth}, nil
}
