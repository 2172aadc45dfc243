package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"dcpi/analysis/report"
	"dcpi/wire"
)

// stacksDB writes a database with call stacks, as nodes with stacks on
// would: /bin/app's main calls work (return address 0x54) and helper
// (0x64); work calls helper (0x114).
func stacksDB(t *testing.T) string {
	t.Helper()
	dir, db, app := appDB(t, []wire.Symbol{{Name: "main", Addr: 0x120000000, Size: 0x100}, {Name: "work", Addr: 0x120000100, Size: 0x100}, {Name: "helper", Addr: 0x120000200, Size: 0x100}})
	f := func(off uint64) wire.Frame { return wire.Frame{Image: app, Offset: off} }
	b := &wire.Batch{Version: wire.StackVersion, Host: "h", Seq: 1, Epoch: 1,
		Entries: []wire.Entry{{Image: app, Offset: 0x120, Count: 60}, {Image: app, Offset: 0x210, Count: 40}},
		Stacks: []wire.StackEntry{
			{Frames: []wire.Frame{f(0x120), f(0x54)}, Count: 60},
			{Frames: []wire.Frame{f(0x210), f(0x114), f(0x54)}, Count: 30},
			{Frames: []wire.Frame{f(0x210), f(0x64)}, Count: 10},
		}}
	b.Normalize()
	if _, err := db.ApplyBatch(b); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return dir
}

func TestStacksCommands(t *testing.T) {
	dir := stacksDB(t)
	out, _, err := run(t, "stacks", "--db", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"top-down", "         100            0 100.00%  main (app)", "          90           60  90.00%    work (app)", "          30           30  30.00%      helper (app)"} {
		if !strings.Contains(out, want) {
			t.Errorf("stacks: no %q in\n%s", want, out)
		}
	}
	out, _, err = run(t, "stacks", "--db", dir, "--bottom-up", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var tree report.TreeNode
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		t.Fatal(err)
	}
	if tree.Total != 100 || len(tree.Children) != 2 || tree.Children[0].Proc.Procedure != "work" || tree.Children[1].Proc.Procedure != "helper" ||
		len(tree.Children[1].Children) != 2 {
		t.Fatalf("bottom-up tree %+v", tree)
	}
	out, _, err = run(t, "prof", "--db", dir, "--by-caller")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"          40           40  40.00%  helper (app)", "          30               75.00%      <- work (app)", "          10               25.00%      <- main (app)"} {
		if !strings.Contains(out, want) {
			t.Errorf("prof --by-caller: no %q in\n%s", want, out)
		}
	}
	if _, _, err := run(t, "stacks", "--db", dir, "--top-down", "--bottom-up"); err == nil {
		t.Error("--top-down --bottom-up accepted")
	}

	// pprof: multi-frame samples, and --flat the flat ones.
	for _, flat := range []bool{false, true} {
		pb := filepath.Join(t.TempDir(), "p.pb.gz")
		args := []string{"pprof", "--db", dir, "-o", pb, "--period", "cycles=0"}
		if flat {
			args = append(args, "--flat")
		}
		if _, _, err := run(t, args...); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(pb)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		deepest := 0
		for _, s := range p.Sample {
			deepest = max(deepest, len(s.Location))
		}
		if flat && deepest != 1 || !flat && (deepest != 3 || len(p.Sample) != 3) {
			t.Errorf("flat %v: %d samples, deepest %d frames", flat, len(p.Sample), deepest)
		}
	}
}
