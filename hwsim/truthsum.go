package hwsim

import (
	"fmt"
	"io"

	"dcpi/hwsim/alpha"
)

// WriteGroundTruthOf writes the ground truth of several machines (a fleet
// running the same programs) summed per image and instruction, in
// WriteGroundTruth's format.
func WriteGroundTruthOf(w io.Writer, machines ...*Machine) error {
	if len(machines) == 1 {
		return machines[0].WriteGroundTruth(w)
	}
	sum := map[string]*alpha.GroundTruth{}
	for _, m := range machines {
		if m.truth == nil {
			return fmt.Errorf("hwsim: ground truth was not collected (Config.GroundTruth)")
		}
		for path, g := range m.truth {
			if sum[path] == nil {
				sum[path] = alpha.NewGroundTruth()
			}
			sum[path].Add(g)
		}
	}
	return (&Machine{truth: sum}).WriteGroundTruth(w)
}
