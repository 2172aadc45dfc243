package profileme

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"dcpi/analysis/internal/analysistest"
	"dcpi/analysis/symbolize"
	"dcpi/internal/hotlist"
	"dcpi/storage"
	"dcpi/wire"
)

// meSource serves fixed ProfileMe rows (the Source of dcpi me); with
// addrs, it serves address lists too (an AddrSource).
type meSource struct{ rows []storage.MeRow }

func (s *meSource) MeProfile(_ context.Context, q storage.Query, fn func(*storage.MeRow) error) error {
	for i := range s.rows {
		if len(q.Hosts) > 0 && q.Hosts[0] != s.rows[i].Host {
			continue
		}
		if err := fn(&s.rows[i]); err != nil {
			return err
		}
	}
	return nil
}

type meAddrSource struct {
	meSource
	addrs []storage.MeAddrRow
}

func (s *meAddrSource) MeAddrs(_ context.Context, _ storage.Query, fn func(*storage.MeAddrRow) error) error {
	for i := range s.addrs {
		if err := fn(&s.addrs[i]); err != nil {
			return err
		}
	}
	return nil
}

// meRow is a row of /bin/app (analysistest.Fleet's image 1) at offset off
// with k samples, r of them retired and d with a D-cache miss.
func meRow(host string, off, k, r, d uint64) storage.MeRow {
	row := storage.MeRow{Image: analysistest.Key(1), Offset: off, Host: host}
	row.Counts[wire.MeSamples], row.Counts[wire.MeRetired], row.Counts[wire.MeDMiss] = k, r, d
	return row
}

// TestRunReport: dcpi me's summary ranks procedures by samples and sums
// their instructions; a procedure's listing has one line per instruction;
// Limit caps the summary; the text and the JSON are the report's.
func TestRunReport(t *testing.T) {
	syms := symbolize.New(analysistest.Fleet())
	src := &meSource{rows: []storage.MeRow{
		meRow("alpha", 0x210, 10, 9, 2), meRow("alpha", 0x214, 6, 6, 0), // main: 16
		meRow("alpha", 0x260, 40, 38, 4), // work: 40
		meRow("beta", 0x214, 4, 4, 0),    // main: 4 more
	}}
	o := Options{Interval: 1000}
	out, err := Run(context.Background(), syms, src, o)
	if err != nil {
		t.Fatal(err)
	}
	rep := out.(*Report)
	if rep.Listing || rep.Samples != 60 || len(rep.Procs) != 2 || rep.Procs[0].Procedure != "work" || rep.Procs[0].Samples.Samples != 40 ||
		rep.Procs[1].Procedure != "main" || rep.Procs[1].Samples.Samples != 20 || rep.Procs[1].Retired.Count != 19*1000 {
		t.Fatalf("summary: %+v", rep)
	}
	o.Limit = 1
	if out, err = Run(context.Background(), syms, src, o); err != nil || len(out.(*Report).Procs) != 1 {
		t.Fatalf("--limit 1: %v %+v", err, out)
	}
	o.Limit, o.Procedure = 0, "main"
	out, err = Run(context.Background(), syms, src, o)
	if err != nil {
		t.Fatal(err)
	}
	rep = out.(*Report)
	if !rep.Listing || len(rep.Procs) != 1 || len(rep.Procs[0].Instrs) != 2 ||
		rep.Procs[0].Instrs[0].Addr != analysistest.Base+0x210 || rep.Procs[0].Instrs[1].Samples.Samples != 10 {
		t.Fatalf("listing: %+v", rep)
	}
	var text, js bytes.Buffer
	if err := out.WriteText(&text); err != nil || !strings.Contains(text.String(), "ProfileMe: 20 samples, one per 1000 fetched instructions") ||
		!strings.Contains(text.String(), "main (/bin/app): 20 samples") || !strings.Contains(text.String(), "0x120000214") {
		t.Fatalf("text: %v\n%s", err, &text)
	}
	var back Report
	if err := out.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || back.Samples != 20 || !back.Listing ||
		!strings.HasPrefix(js.String(), "{\n  \"interval\": 1000,") {
		t.Fatalf("json: %v\n%s", err, &js)
	}
}

// TestRunRefusals: a negative limit, an empty selection (with the
// caller's hint, or asking whether the nodes sampled), and a view the
// source cannot serve are refused with what to do.
func TestRunRefusals(t *testing.T) {
	ctx := context.Background()
	syms := symbolize.New(analysistest.Fleet())
	src := &meSource{rows: []storage.MeRow{meRow("alpha", 0x210, 10, 9, 2)}}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Interval: 1, Limit: -1}, "--limit -1: want 0 (all) or more"},
		{Options{Interval: 1, Filter: storage.Query{Hosts: []string{"nobody"}}}, "no ProfileMe samples selected (were the nodes run with --profileme?)"},
		{Options{Interval: 1, Filter: storage.Query{Hosts: []string{"nobody"}}, Hint: func() string { return "no host nobody" }}, "no ProfileMe samples selected: no host nobody"},
		{Options{Interval: 1, Procedure: "work", Hint: func() string { return "" }}, "no ProfileMe samples in procedure work (were the nodes run with --profileme?)"},
		{Options{Interval: 1, Addrs: "main", Where: "this database"}, "--addrs: this database does not serve ProfileMe address lists"},
		{Options{Interval: 1, Paths: true, Bits: 4, Where: "the cluster"}, "--paths: the cluster keeps no ProfileMe path history"},
	} {
		if _, err := Run(ctx, syms, src, c.o); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if err := (Options{Limit: -2}).Check(); err == nil {
		t.Errorf("Check of a negative limit: no error")
	}
}

// TestRunAddrs: the hot addresses of a procedure's instructions, their
// estimates τ·c·S; an empty selection is refused naming the target; the
// JSON is the list of instructions.
func TestRunAddrs(t *testing.T) {
	ctx := context.Background()
	syms := symbolize.New(analysistest.Fleet())
	src := &meAddrSource{addrs: []storage.MeAddrRow{{Image: analysistest.Key(1), Offset: 0x214,
		List: hotlist.List{N: 10, Entries: []hotlist.Entry{{Value: 0x2000, Count: 3}, {Value: 0x1000, Count: 7}}}}}}
	out, err := Run(ctx, syms, src, Options{Interval: 100, Addrs: "main"})
	if err != nil {
		t.Fatal(err)
	}
	r := out.(*AddrReport)
	if len(r.Instrs) != 1 || r.Instrs[0].Address != analysistest.Base+0x214 || len(r.Instrs[0].Addrs) != 2 ||
		r.Instrs[0].Addrs[0].Value != 0x1000 || r.Instrs[0].Addrs[0].Estimate != 700 || r.Instrs[0].Addrs[0].Share != 0.7 {
		t.Fatalf("addrs: %+v", r.Instrs)
	}
	var js, text bytes.Buffer
	var back []AddrInstr
	if err := out.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || len(back) != 1 || back[0].Addrs[1].Value != 0x2000 {
		t.Fatalf("json: %v\n%s", err, &js)
	}
	if err := out.WriteText(&text); err != nil || !strings.Contains(text.String(), "S = 100") || !strings.Contains(text.String(), "0x120000214 main (/bin/app)") {
		t.Fatalf("text: %v\n%s", err, &text)
	}
	if _, err := Run(ctx, syms, src, Options{Interval: 100, Addrs: "work"}); err == nil || err.Error() != "--addrs work: no ProfileMe address lists selected" {
		t.Fatalf("addrs of work: %v", err)
	}
}
