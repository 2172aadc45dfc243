// Package valuemod owns DCPI value sampling's customization modules
// (Burrows et al.): what the driver's interpreter captures of each
// interpreted instruction (a capture spec per opcode), how a run's
// captures become (PC, value type, value) pairs (a transform), and how a
// value is printed (a formatter). DCPI's daemon loaded modules; Go's
// plugin package is brittle, so here they are compiled in and registered
// by name: the CLI and the configuration select one, and an unknown name
// is an error that lists the known ones. It imports only the ISA
// (hwsim/alpha) to classify instructions.
package valuemod

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"dcpi/hwsim/alpha"
)

// Kind is a value type: the second half of a hot list's key.
type Kind uint8

// Value types.
const (
	KindLatency  Kind = 1 // a load's latency in cycles, by the cycle counter around it
	KindResult   Kind = 2 // the register an instruction writes, after it
	KindOperandA Kind = 3 // register operand a, before the instruction
	KindOperandB Kind = 4 // register operand b, before the instruction
	KindAddress  Kind = 5 // a load's or store's effective address
)

var kindNames = map[Kind]string{KindLatency: "latency", KindResult: "result",
	KindOperandA: "ra", KindOperandB: "rb", KindAddress: "address"}

// String names k.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// Valid reports whether k is a known value type.
func (k Kind) Valid() bool { _, ok := kindNames[k]; return ok }

// Capture is what the interpreter records of one instruction, beyond the
// PC and instruction word it always records.
type Capture uint8

// What may be captured.
const (
	CapLatency  Capture = 1 << iota // loads: cycles around the interpreted load
	CapResult                       // the destination register after
	CapOperandA                     // Ra before
	CapOperandB                     // Rb before (not a literal)
	CapAddress                      // the effective address
)

// Tuple is one interpreted instruction's captures.
type Tuple struct {
	PC      uint64
	Word    uint32
	Op      alpha.Op
	Got     Capture
	Latency uint64
	Result  uint64
	A, B    uint64
	Address uint64
}

// Value is one (PC, value type, value) a transform emits: one offer to the
// PC's hot list of that type.
type Value struct {
	PC   uint64
	Kind Kind
	V    uint64
}

// Module is one customization module.
type Module struct {
	Name    string
	Summary string
	// Kinds lists the value types the module emits.
	Kinds []Kind
	// Spec says what to capture of an instruction (op, its issue class).
	Spec func(op alpha.Op, cl alpha.IssueClass) Capture
	// Transform turns one interrupt's run of tuples into values; nil
	// emits each captured field of each tuple as its own value.
	Transform func(run []Tuple, emit func(Value))
	// Format prints v, a value of type k captured at an instruction whose
	// word is w.
	Format func(k Kind, w uint32, v uint64) string
}

// Emit runs m's transform over run.
func (m *Module) Emit(run []Tuple, emit func(Value)) {
	if m.Transform != nil {
		m.Transform(run, emit)
		return
	}
	for _, t := range run {
		if t.Got&CapLatency != 0 {
			emit(Value{t.PC, KindLatency, t.Latency})
		}
		if t.Got&CapResult != 0 {
			emit(Value{t.PC, KindResult, t.Result})
		}
		if t.Got&CapOperandA != 0 {
			emit(Value{t.PC, KindOperandA, t.A})
		}
		if t.Got&CapOperandB != 0 {
			emit(Value{t.PC, KindOperandB, t.B})
		}
		if t.Got&CapAddress != 0 {
			emit(Value{t.PC, KindAddress, t.Address})
		}
	}
}

var registry = map[string]*Module{}

// Register adds m to the registry; a module's package calls it from init.
// A second module of the same name panics: that is a build error.
func Register(m *Module) {
	if _, dup := registry[m.Name]; dup || m.Name == "" || m.Spec == nil || m.Format == nil {
		panic("valuemod: bad or duplicate module " + m.Name)
	}
	registry[m.Name] = m
}

// Names lists the registered modules, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Lookup returns the module named name, or an error listing the known
// ones.
func Lookup(name string) (*Module, error) {
	if m, ok := registry[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("valuemod: unknown value-sampling module %q (known: %s)", name, strings.Join(Names(), ", "))
}

// isLoad reports whether op reads memory into a register (not a hint).
func isLoad(op alpha.Op, cl alpha.IssueClass) bool {
	return cl.Load && op != alpha.OpFETCH && op != alpha.OpECB && op != alpha.OpWH64
}

// decode decodes w for formatting (every extension: the formatter only
// classifies).
func decode(w uint32) (alpha.Decoded, alpha.IssueClass) {
	d := alpha.Decode(w, alpha.EV67)
	return d, alpha.ClassOf(d.Op)
}

// fpOf reports whether value type k of the instruction w is an FP
// register.
func fpOf(k Kind, w uint32) bool {
	_, cl := decode(w)
	switch k {
	case KindResult:
		return cl.FPDst
	case KindOperandA:
		return cl.FPA
	case KindOperandB:
		return cl.FPB
	}
	return false
}

// FormatRegister prints a register value: an FP register as the IEEE
// double its bits hold (the 21164 keeps singles in T format too), anything
// else in hex.
func FormatRegister(k Kind, w uint32, v uint64) string {
	if fpOf(k, w) {
		return fmt.Sprint(math.Float64frombits(v))
	}
	return fmt.Sprintf("%#x", v)
}

func init() {
	Register(&Module{
		Name:    "loadlat",
		Summary: "load latency: cycles around each interpreted load, binned by memory-hierarchy level",
		Kinds:   []Kind{KindLatency},
		Spec: func(op alpha.Op, cl alpha.IssueClass) Capture {
			if isLoad(op, cl) {
				return CapLatency
			}
			return 0
		},
		Format: func(_ Kind, _ uint32, v uint64) string { return fmt.Sprintf("%d", v) },
	})
	Register(&Module{
		Name:    "regvals",
		Summary: "frequent values of register results",
		Kinds:   []Kind{KindResult},
		Spec: func(_ alpha.Op, cl alpha.IssueClass) Capture {
			if cl.Writes != 0 {
				return CapResult
			}
			return 0
		},
		Format: FormatRegister,
	})
	Register(&Module{
		Name:    "semiinv",
		Summary: "semi-invariant operands: register operands that mostly hold one value",
		Kinds:   []Kind{KindOperandA, KindOperandB},
		Spec: func(_ alpha.Op, cl alpha.IssueClass) Capture {
			var c Capture
			if cl.ReadsA {
				c |= CapOperandA
			}
			if cl.ReadsB {
				c |= CapOperandB
			}
			return c
		},
		Format: FormatRegister,
	})
}
