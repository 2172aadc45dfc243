package profiledb

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/storage"
	"dcpi/wire"
)

// stacksDB is a local database with call stacks, as nodes with stacks on
// write them: host h, epoch 1, /bin/app's main calls work (return address
// 0x54) and helper (0x64); work calls helper (0x114). The flat profile
// holds 60 samples in work and 40 in helper.
func stacksDB(t *testing.T) *Local {
	t.Helper()
	db, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	app := wire.MustParseImageKey("buildid:0101")
	if err := db.PutImage(&wire.ImageRecord{Version: wire.Version, Key: app, Path: "/bin/app", TextStart: 0x120000000, TextEnd: 0x120001000, Base: 0x120000000,
		Symbols: []wire.Symbol{{Name: "main", Addr: 0x120000000, Size: 0x100}, {Name: "work", Addr: 0x120000100, Size: 0x100}, {Name: "helper", Addr: 0x120000200, Size: 0x100}}}); err != nil {
		t.Fatal(err)
	}
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
	return NewLocal(db)
}

// TestProfOptions: a bad --by or --limit is refused before anything is
// read, naming the flag.
func TestProfOptions(t *testing.T) {
	for _, o := range []ProfOptions{{By: "procedure"}, {By: "proc", Limit: 3}, {By: "image", ByCaller: true}} {
		if err := o.Check(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, tc := range []struct {
		o    ProfOptions
		want string
	}{
		{ProfOptions{By: "x-y"}, `--by "x-y": want procedure, image, or a label to group by (service, host, ...)`},
		{ProfOptions{By: "service", ByCaller: true}, "--by-caller: not with --by service (a label groups the flat profile)"},
		{ProfOptions{By: "procedure", Limit: -1}, "--limit -1: want 0 (all) or more"},
	} {
		if err := tc.o.Check(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
		if _, err := Prof(t.Context(), nil, nil, Selection{}, tc.o); err == nil || err.Error() != tc.want {
			t.Errorf("Prof %+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestProf: the flat table and the by-caller table of a database, and
// the words that follow an empty one.
func TestProf(t *testing.T) {
	db := stacksDB(t)
	r, err := Prof(t.Context(), db, db, Selection{}, ProfOptions{By: "procedure", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Callers != nil || len(r.Table.Rows) != 1 || r.Table.Rows[0].Procedure != "work" || r.Table.Rows[0].Counts[0] != 60 ||
		r.Table.Columns[0].Total != 100 || r.Table.Omitted != 1 || r.Table.OmittedCounts[0] != 40 || r.Hint != "" {
		t.Fatalf("prof --limit 1: %+v, hint %q", r.Table, r.Hint)
	}

	// Nothing selected: the hint names the hosts there are, after the
	// text table and not in the JSON.
	r, err = Prof(t.Context(), db, db, Selection{Filter: storage.Query{Hosts: []string{"nosuch"}}}, ProfOptions{By: "image"})
	if err != nil {
		t.Fatal(err)
	}
	const hint = "no samples for host nosuch; hosts in this database: h"
	if len(r.Table.Rows) != 0 || r.Hint != hint {
		t.Fatalf("--host nosuch: %d rows, hint %q, want %q", len(r.Table.Rows), r.Hint, hint)
	}
	var text, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(text.String(), "\n"+hint+"\n") {
		t.Errorf("text does not end in the hint:\n%s", text.String())
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var tb report.ProfTable
	if err := json.Unmarshal(js.Bytes(), &tb); err != nil || strings.Contains(js.String(), "hosts in") {
		t.Errorf("JSON %v:\n%s", err, js.String())
	}

	// By caller: helper's 40 samples, 30 through work and 10 from main.
	r, err = Prof(t.Context(), db, db, Selection{}, ProfOptions{By: "procedure", ByCaller: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Table != nil || r.Callers.Total != 100 {
		t.Fatalf("by caller: %+v", r)
	}
	var helper *report.CalleeRow
	for i := range r.Callers.Rows {
		if r.Callers.Rows[i].Proc.Procedure == "helper" {
			helper = &r.Callers.Rows[i]
		}
	}
	if helper == nil || helper.Self != 40 || helper.Inclusive != 40 || len(helper.Callers) != 2 ||
		helper.Callers[0].Caller.Procedure != "work" || helper.Callers[0].Samples != 30 || helper.Callers[0].Percent != 75 ||
		helper.Callers[1].Caller.Procedure != "main" || helper.Callers[1].Samples != 10 {
		t.Errorf("helper's row %+v", helper)
	}
	js.Reset()
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var ct report.CallerTable
	if err := json.Unmarshal(js.Bytes(), &ct); err != nil || ct.Total != 100 || len(ct.Rows) != len(r.Callers.Rows) {
		t.Errorf("by-caller JSON %v: %+v", err, ct)
	}

	// No stacks selected: the note says why.
	r, err = Prof(t.Context(), db, db, Selection{Filter: storage.Query{Epochs: []uint64{9}}}, ProfOptions{By: "procedure", ByCaller: true})
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(text.String(), "\n"+NoStacksNote+"\n") {
		t.Errorf("no stacks:\n%s", text.String())
	}
}

// TestStacks: the options' refusals, and the tree both ways with its
// pruning in text and none in JSON.
func TestStacks(t *testing.T) {
	for _, tc := range []struct {
		o    StacksOptions
		want string
	}{
		{StacksOptions{TopDown: true, BottomUp: true, MinPercent: 1}, "--top-down and --bottom-up: choose one"},
		{StacksOptions{MinPercent: -1}, "--min -1: want a percentage from 0 to 100"},
		{StacksOptions{MinPercent: 100.5}, "--min 100.5: want a percentage from 0 to 100"},
		{StacksOptions{Depth: -2}, "--depth -2: want 0 (all) or more"},
	} {
		if _, err := Stacks(t.Context(), nil, Selection{}, tc.o); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	db := stacksDB(t)
	r, err := Stacks(t.Context(), db, Selection{}, StacksOptions{MinPercent: 1})
	if err != nil {
		t.Fatal(err)
	}
	root := r.Tree.Root
	if !r.Tree.TopDown || root.Total != 100 || len(root.Children) != 1 || root.Children[0].Proc.Procedure != "main" ||
		root.Children[0].Children[0].Proc.Procedure != "work" || root.Children[0].Children[0].Total != 90 || root.Children[0].Children[0].Self != 60 {
		t.Fatalf("top-down tree %+v", root)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"top-down", "         100            0 100.00%  main (app)", "          90           60  90.00%    work (app)", "          30           30  30.00%      helper (app)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("no %q in\n%s", want, text.String())
		}
	}

	// Bottom-up, pruned to one level in text; the JSON keeps every level.
	r, err = Stacks(t.Context(), db, Selection{}, StacksOptions{BottomUp: true, MinPercent: 1, Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "  <-") || strings.Count(text.String(), "(app)") != 2 {
		t.Errorf("bottom-up at depth 1:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var tree report.TreeNode
	if err := json.Unmarshal(js.Bytes(), &tree); err != nil {
		t.Fatal(err)
	}
	if tree.Total != 100 || len(tree.Children) != 2 || tree.Children[0].Proc.Procedure != "work" || tree.Children[1].Proc.Procedure != "helper" ||
		len(tree.Children[1].Children) != 2 {
		t.Fatalf("bottom-up JSON %+v", tree)
	}

	// The first event counts; nothing of it selected, the note says why.
	r, err = Stacks(t.Context(), db, Selection{Events: []uint8{1, 0}}, StacksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if r.Tree.Root.Total != 0 || !strings.HasSuffix(text.String(), "\n"+NoStacksNote+"\n") {
		t.Errorf("event 1: total %d\n%s", r.Tree.Root.Total, text.String())
	}
}

// TestStacksRefusesAProfileWithout: a profile with no call stacks at all
// is refused with the commands that record them, not printed as an
// empty tree.
func TestStacksRefusesAProfileWithout(t *testing.T) {
	if _, err := Stacks(t.Context(), analysis.NewMemSource(), Selection{}, StacksOptions{}); !errors.Is(err, ErrNoStacks) {
		t.Fatalf("got %v, want ErrNoStacks", err)
	}
}
