package hwsim

import "dcpi/hwsim/alpha"

// newTiming returns a CPU's timing model.
func (m *Machine) newTiming() *alpha.Timing {
	return &alpha.Timing{Mem: alpha.PerfectMemory{}, MispredictPenalty: 5}
}
