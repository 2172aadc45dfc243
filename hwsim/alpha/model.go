package alpha

import (
	"fmt"
	"strings"
)

// Ext is a set of Alpha instruction-set extensions, as AMASK reports them
// (Alpha Architecture Handbook, "AMASK"): a set bit means the CPU has it.
type Ext uint64

// AMASK bit assignments.
const (
	ExtBWX     Ext = 1 << 0 // byte/word loads and stores, sextb/sextw
	ExtFIX     Ext = 1 << 1 // sqrt, itof/ftoi register moves
	ExtCIX     Ext = 1 << 2 // ctpop, ctlz, cttz
	ExtMVI     Ext = 1 << 8 // multimedia: min/max, perr, pack/unpack
	ExtPrecise Ext = 1 << 9 // precise arithmetic traps
)

// Model is a CPU implementation: which extensions it has and what IMPLVER
// answers. Instructions from an extension the model lacks raise SIGILL, as
// the hardware's OPCDEC trap does.
type Model struct {
	Name    string
	Ext     Ext
	Implver uint64 // 0 = EV4, 1 = EV5, 2 = EV6
}

// The models gcc's -mcpu values name. The 21164 (EV5) is the default: it
// has no extensions at all (ALPHA-NOTES.md: BWX starts with the 21164A).
var (
	EV5   = Model{Name: "ev5", Ext: 0, Implver: 1}
	EV56  = Model{Name: "ev56", Ext: ExtBWX, Implver: 1}
	PCA56 = Model{Name: "pca56", Ext: ExtBWX | ExtMVI, Implver: 1}
	EV6   = Model{Name: "ev6", Ext: ExtBWX | ExtFIX | ExtMVI | ExtPrecise, Implver: 2}
	EV67  = Model{Name: "ev67", Ext: ExtBWX | ExtFIX | ExtCIX | ExtMVI | ExtPrecise, Implver: 2}
)

// ModelLabel is the host label a profile run records an out-of-order
// core under (model=ev6): the analyses that model the 21164's in-order
// pipeline (dcpicalc) read it to refuse such a profile.
const ModelLabel = "model"

// OutOfOrder reports whether the model's core issues out of order (the
// 21264, IMPLVER 2), which no static in-order schedule describes.
func (m Model) OutOfOrder() bool { return m.Implver >= 2 }

// Models lists the known CPU models in order of age.
var Models = []Model{EV5, EV56, PCA56, EV6, EV67}

// ModelByName finds a model by its -mcpu name (case-insensitive).
func ModelByName(name string) (Model, error) {
	for _, m := range Models {
		if strings.EqualFold(m.Name, name) {
			return m, nil
		}
	}
	names := make([]string, len(Models))
	for i, m := range Models {
		names[i] = m.Name
	}
	return Model{}, fmt.Errorf("unknown CPU model %q (known: %s)", name, strings.Join(names, ", "))
}
