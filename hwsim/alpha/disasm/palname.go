package disasm

import (
	"fmt"
	"strings"
)

// ParsePAL reads a PAL by its command-line name, as objdump's -m
// alpha:evN names it: none (or ""), ev4, ev5 or ev6, in any case.
func ParsePAL(name string) (PAL, error) {
	switch strings.ToLower(name) {
	case "", "none":
		return PALNone, nil
	case "ev4":
		return PALEV4, nil
	case "ev5":
		return PALEV5, nil
	case "ev6":
		return PALEV6, nil
	}
	return PALNone, fmt.Errorf("%q: want none, ev4, ev5 or ev6", name)
}
