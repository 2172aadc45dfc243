package simhost

import (
	"slices"
	"strings"
	"testing"
)

// TestChoosePrograms: a node runs the programs after --, else the named
// workloads, else a mix (the default mix without one), and refuses both
// ways at once and names it does not know.
func TestChoosePrograms(t *testing.T) {
	given := func(progs []Program) []string {
		var names []string
		for _, p := range progs {
			names = append(names, p.Given)
		}
		return names
	}
	progs, err := ChoosePrograms("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := given(progs); !slices.Equal(got, []string{"hashdb", "interp", "matmul", "ptrchase", "server", "stream"}) {
		t.Errorf("default mix: %v", got)
	}
	progs, err = ChoosePrograms("", []string{"sort", "ccdriver"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := given(progs); !slices.Equal(got, []string{"sort", "ccdriver"}) || progs[0].Path != "/bin/sort" || progs[0].User() {
		t.Errorf("workloads: %v, first %+v", got, progs[0])
	}
	progs, err = ChoosePrograms("", nil, []string{"sort", "9", ":", "ccdriver"})
	if err != nil {
		t.Fatal(err)
	}
	if got := given(progs); len(got) != 2 || !slices.Equal(progs[0].Argv[1:], []string{"9"}) {
		t.Errorf("after --: %v, first argv %v", got, progs[0].Argv)
	}
	for _, tc := range []struct {
		mix         string
		names, args []string
		want        string
	}{
		{"default", nil, []string{"sort"}, "programs after -- and --mix or --workloads: give one or the other"},
		{"", []string{"sort"}, []string{"sort"}, "give one or the other"},
		{"nosuch", nil, nil, `no mix "nosuch" (mixes: `},
		{"", []string{"nope"}, nil, `no embedded workload "nope"`},
	} {
		if _, err := ChoosePrograms(tc.mix, tc.names, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ChoosePrograms(%q, %v, %v): %v, want %q", tc.mix, tc.names, tc.args, err, tc.want)
		}
	}
}
