package simhost

import (
	"fmt"
	"slices"

	"dcpi/hwsim"
	"dcpi/node/valuemod"
	"dcpi/wire"
)

// checkValuesModel refuses load-latency sampling on the 21264's
// out-of-order core: the interpreter's latency is the cycle counter
// around an instruction run to completion, which hwsim's Step gives on
// the 21164's in-order model only — on the 21264 core a stepped load
// retires in the shadow of the pipeline the handler left in flight
// (latencies of 0 and 1 cycles), and its levels (D-cache 3, Bcache 13,
// memory 83 cycles, docs/ev6.md) are not the 21164's the report bins by.
// Register values (regvals, semiinv) need no timing and are allowed.
func checkValuesModel(m *hwsim.Machine, module string) error {
	mod, err := valuemod.Lookup(module)
	if err != nil || !slices.Contains(mod.Kinds, valuemod.KindLatency) {
		return nil // an unknown module is the node's to refuse
	}
	if c := m.Config(); c.Timing && c.Model.Implver >= 2 {
		return fmt.Errorf("simhost: value sampling module %s measures load latencies, which the interpreter cannot on the %s's out-of-order core (stepping does not run a load to completion there, and the latency levels are the 21164's); use --model ev5 or a register-value module (regvals, semiinv)", module, c.Model.Name)
	}
	return nil
}

// PublishValues applies a value-sampling record (storage.DB.ApplyValues);
// a redelivered one changes nothing.
func (s LocalSink) PublishValues(r *wire.ValuesRecord) error {
	_, err := s.DB.ApplyValues(r)
	return err
}
