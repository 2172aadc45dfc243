package lint

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// moduleGraph lists the module's packages with their imports and
// dependencies, test files left out (go list's Imports and Deps).
func moduleGraph(t *testing.T) []Package {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", "dcpi/...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Skipf("go list: %v", err)
	}
	var graph []Package
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			t.Fatalf("go list line %q", sc.Text())
		}
		graph = append(graph, Package{Path: f[0], Imports: strings.Fields(f[1]), Deps: strings.Fields(f[2])})
	}
	if len(graph) < 20 {
		t.Fatalf("go list found %d packages", len(graph))
	}
	return graph
}

// TestForbiddenImports holds the module to Rules.
func TestForbiddenImports(t *testing.T) {
	graph := moduleGraph(t)
	for _, v := range Check(graph, Rules) {
		t.Error(v)
	}
	for _, u := range Unmatched(graph, Rules) {
		t.Errorf("rule %s matches no package", u)
	}
}

// TestCheckCatchesABadImport: the check reports an import a rule forbids,
// directly and through a dependency, and passes what its exceptions allow —
// the test above would fail on a deliberately added bad import.
func TestCheckCatchesABadImport(t *testing.T) {
	graph := []Package{
		{Path: "dcpi/storage", Imports: []string{"github.com/cockroachdb/pebble/v2"}},
		{Path: "dcpi/transport", Imports: []string{"dcpi/wire", "dcpi/aggregator"}, Deps: []string{"dcpi/wire", "dcpi/aggregator", "dcpi/storage", "github.com/cockroachdb/pebble/v2"}},
		{Path: "dcpi/transport/auth", Imports: []string{"dcpi/transport"}, Deps: []string{"dcpi/transport", "dcpi/wire/coordproto"}},
		{Path: "dcpi/node", Imports: []string{"dcpi/hwsim/alpha", "dcpi/hwsim/timing"}},
		{Path: "dcpi/analysis/report", Imports: []string{"github.com/cockroachdb/pebble/v2/vfs"}},
	}
	got := Check(graph, Rules)
	want := []string{
		"dcpi/analysis/report imports github.com/cockroachdb/pebble/v2/vfs: breaks \"only storage imports Pebble\"",
		"dcpi/node imports dcpi/hwsim/timing: breaks \"the node agent knows nothing of the simulator beyond the ISA\"",
		"dcpi/transport depends on dcpi/aggregator: breaks \"the transport links no consumer and no database\"",
		"dcpi/transport depends on dcpi/storage: breaks \"the transport links no consumer and no database\"",
		"dcpi/transport depends on github.com/cockroachdb/pebble/v2: breaks \"the transport links no consumer and no database\"",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%v", len(got), len(want), got)
	}
	for i, v := range got {
		if !strings.HasPrefix(v.String(), want[i]) {
			t.Errorf("violation %d: %s\nwant %s", i, v, want[i])
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"dcpi/hwsim/...", "dcpi/hwsim", true},
		{"dcpi/hwsim/...", "dcpi/hwsim/alpha/disasm", true},
		{"dcpi/hwsim/...", "dcpi/hwsimx", false},
		{"dcpi/hwsim", "dcpi/hwsim/alpha", false},
		{"dcpi/hwsim/alpha", "dcpi/hwsim/alpha", true},
	} {
		if got := match(c.pattern, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v", c.pattern, c.path, got)
		}
	}
}
