package simhost

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"dcpi/hwsim/timing"
)

// ApplyMemoryParams overrides fields of p from the sim.memory section of the
// configuration, whose keys are the field names in snake case
// (bcache_size for BcacheSize). An unknown key is an error that lists the
// known ones.
func ApplyMemoryParams(p *timing.Params, over map[string]any) error {
	if len(over) == 0 {
		return nil
	}
	fields := map[string]string{}
	t := reflect.TypeOf(*p)
	for i := 0; i < t.NumField(); i++ {
		fields[snake(t.Field(i).Name)] = t.Field(i).Name
	}
	byField := map[string]any{}
	for k, v := range over {
		name, ok := fields[strings.ToLower(k)]
		if !ok {
			known := make([]string, 0, len(fields))
			for f := range fields {
				known = append(known, f)
			}
			sort.Strings(known)
			return fmt.Errorf("config: sim.memory.%s: no such parameter (known: %s)", k, strings.Join(known, ", "))
		}
		byField[name] = v
	}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: p, WeaklyTypedInput: true, ErrorUnused: true})
	if err != nil {
		return err
	}
	if err := dec.Decode(byField); err != nil {
		return fmt.Errorf("config: sim.memory: %w", err)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("config: sim.memory: %w", err)
	}
	return nil
}

// snake turns a Go field name into snake case: BcacheSize -> bcache_size,
// ITBMissCycles -> itb_miss_cycles.
func snake(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		upper := c >= 'A' && c <= 'Z'
		if upper && i > 0 && (r[i-1] >= 'a' && r[i-1] <= 'z' || i+1 < len(r) && r[i+1] >= 'a' && r[i+1] <= 'z') {
			b.WriteByte('_')
		}
		b.WriteRune(c | 0x20*rune(btoi(upper)))
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
