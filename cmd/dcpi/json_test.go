package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// goFieldName is a key that looks like a Go field name (Interrupts,
// GaveUp, lastSeq): one the encoder took from a struct without a json
// tag. Keys that are data (events, hosts, a legend's letters) are lower
// case, a path or one or two capitals.
var goFieldName = regexp.MustCompile(`^([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)$`)

// jsonSkipped are the commands with --json this test does not run, and
// why; another test checks each one's JSON.
var jsonSkipped = map[string]string{
	"dcpi me figure6":  "a minute of simulation (paperfigs' tests)",
	"dcpi loadgen run": "a NATS cluster (TestLoadgenRun)",
	"dcpi pp counts":   "an instrumented program's dump (pp tests)",
	"dcpi pp fleet":    "uploaded path profiles (pp tests)",
	"dcpi web":         "a server (web tests)",
}

// TestJSONIsSnakeCase runs every command that has --json and requires
// every key of what it prints to be snake_case, as the tools' JSON is
// read by machines that should not learn Go's field names. A command
// that gains --json must be added here (or to jsonSkipped, with why).
func TestJSONIsSnakeCase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	if _, stderr, err := run(t, "profile", "--timing=false", "--stacks", "--profileme", "--values", "loadlat", "-o", db, "--", "sort", "3000"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	tmp := t.TempDir()
	// dcpi me reads the pair window the profile recorded: the 21164's 16,
	// not the 21264's 128 it would otherwise assume.
	if out, _, err := run(t, "me", "--db", db, "--json"); err != nil || !strings.Contains(out, `"pair_window": 16,`) {
		t.Errorf("dcpi me on a 21164 profile: %v\n%.200s", err, out)
	}
	lines := map[string][]string{
		"dcpi prof":          {"prof", "--db", db},
		"dcpi list":          {"list", "--db", db, "sift"},
		"dcpi calc":          {"calc", "--db", db, "sift"},
		"dcpi stats":         {"stats", "--db", db, "--set", "host=alpha0", "--set", "host=alpha0"},
		"dcpi diff":          {"diff", "--db", db, "--a", "host=alpha0", "--b", "host=alpha0"},
		"dcpi stacks":        {"stacks", "--db", db},
		"dcpi values":        {"values", "--db", db},
		"dcpi me":            {"me", "--db", db},
		"dcpi totals":        {"totals", "--db", db},
		"dcpi epoch list":    {"epoch", "list", "--db", db},
		"dcpi trend":         {"trend", "--db", db, "--epoch", "0"},
		"dcpi me figure2":    {"me", "figure2", "--args", "1024,2000"},
		"dcpi me figure3":    {"me", "figure3", "--workload", "sort", "--args", "2000"},
		"dcpi me figure7":    {"me", "figure7", "--workload", "sort", "--args", "3000"},
		"dcpi me skid":       {"me", "skid", "--workloads", "sort", "--run", "sort:2000", "--models", "ev5", "--smear="},
		"dcpi pp tables":     {"pp", "tables", "tiny"},
		"dcpi pp oracle":     {"pp", "oracle", "--save", filepath.Join(tmp, "o.pp"), "--json", "--", "tiny"},
		"dcpi pprof":         {"pprof", "--db", db, "-o", filepath.Join(tmp, "p.pb.gz")},
		"dcpi web":           nil,
		"dcpi pp instrument": nil,
	}
	withJSON := commandsWithFlag(newRootCommand(), "json")
	for _, path := range withJSON {
		args, ok := lines[path]
		if why, skip := jsonSkipped[path]; skip {
			t.Logf("%s: not run here: %s", path, why)
			continue
		}
		if !ok || args == nil {
			t.Errorf("%s has --json and no command line in TestJSONIsSnakeCase", path)
			continue
		}
		start := time.Now()
		if !slices.Contains(args, "--json") {
			args = append(args, "--json")
		}
		stdout, stderr, err := run(t, args...)
		if err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(args, " "), err, stderr)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Errorf("%s --json: not one JSON value: %v\n%.300s", strings.Join(args, " "), err, stdout)
			continue
		}
		var bad []string
		walkKeys(v, "", func(where, key string) {
			if goFieldName.MatchString(key) {
				bad = append(bad, where+"."+key)
			}
		})
		if len(bad) > 0 {
			sort.Strings(bad)
			t.Errorf("%s --json: keys not in snake_case: %s", path, strings.Join(bad, ", "))
		}
		t.Logf("%s: %v", path, time.Since(start).Round(time.Millisecond))
	}
}

// commandsWithFlag are the paths of the commands under c with flag name.
func commandsWithFlag(c *cobra.Command, name string) []string {
	var out []string
	if c.Flags().Lookup(name) != nil {
		out = append(out, c.CommandPath())
	}
	for _, sub := range c.Commands() {
		out = append(out, commandsWithFlag(sub, name)...)
	}
	return out
}

// walkKeys calls f with every object key in v and where it is, once per
// distinct place (array elements share theirs).
func walkKeys(v any, where string, f func(where, key string)) {
	seen := map[string]bool{}
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !seen[where+"."+k] {
					seen[where+"."+k] = true
					f(where, k)
				}
				walk(e, where+"."+k)
			}
		case []any:
			for _, e := range x {
				walk(e, where+"[]")
			}
		}
	}
	walk(v, where)
}
