package simhost

import (
	"fmt"
	"io"
	"os"
	"strings"

	"dcpi/conservation"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/internal/writefile"
	"dcpi/node"
	"dcpi/node/valuemod"
	"dcpi/wire"
)

// ValuesConfig is value sampling with module (node.values, --values): an
// unknown module is an error listing the known ones.
func ValuesConfig(module string) (node.ValuesConfig, error) {
	if _, err := valuemod.Lookup(module); err != nil {
		return node.ValuesConfig{}, fmt.Errorf("--values: %w", err)
	}
	return node.DefaultValuesConfig(module), nil
}

// WriteValueTruthFile writes the value truth of machines, summed per
// image and instruction, to file.
func WriteValueTruthFile(machines []*hwsim.Machine, file string) error {
	err := WriteFileWith(file, func(w io.Writer) error { return hwsim.WriteValueTruthOf(w, machines...) })
	if err != nil {
		return fmt.Errorf("--values-truth %s: %w", file, err)
	}
	return nil
}

// ReadValueTruthFile reads a value truth file, naming it in its errors.
func ReadValueTruthFile(name string) (map[string]*alpha.ValueTruth, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--truth: %w", err)
	}
	defer f.Close()
	t, err := hwsim.ReadValueTruth(f)
	if err != nil {
		return nil, fmt.Errorf("--truth %s: %w", name, err)
	}
	return t, nil
}

// WriteValueConservation writes the interpreter's accounting s (of the
// modules mods), as stored, beside what the machines counted — every
// counter interrupt interpreted to the end, given up for a named reason,
// or with no user context (vmunix, idle) — and fails if the interrupts
// differ.
func WriteValueConservation(w io.Writer, mods []string, s wire.ValueStats, machines []*hwsim.Machine) error {
	var delivered, stepped uint64
	for _, m := range machines {
		delivered += MachineInterrupts(m)
		for _, c := range m.CPUStats() {
			stepped += c.Interpreted
		}
	}
	fmt.Fprintf(w, "value sampling (%s): %s\n", strings.Join(mods, ","), conservation.ValuesLine(s, delivered))
	fmt.Fprintf(w, "  %d instructions interpreted (%d stepped by the machines), %d values offered, %d lost to full tables, %d unattributed\n",
		s.Steps, stepped, s.Values, s.TableFull, s.Unattributed)
	if s.Interrupts != delivered {
		return fmt.Errorf("value sampling accounts for %d interrupts, the machines delivered %d", s.Interrupts, delivered)
	}
	return nil
}

// WriteFileWith creates the file name and has write fill it; an error
// closing it (a full disk shows there) is an error of the write.
func WriteFileWith(name string, write func(io.Writer) error) error {
	return writefile.With(name, write)
}
