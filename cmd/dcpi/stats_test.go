package main

import (
	"encoding/json"
	"strings"
	"testing"

	"dcpi/analysis/report"
)

func TestStatsCommand(t *testing.T) {
	db := setsDB(t)
	out, _, err := run(t, "stats", "--db", db, "--by-host")
	if err != nil {
		t.Fatal(err)
	}
	// main: 2000 on a, 1510 on b: range 490/3510 = 13.96%; work: 2020 and
	// 2490, 470/4510 = 10.42%.
	for _, want := range []string{"set 1 (host=a) = 4020", "set 2 (host=b) = 4000", "TOTAL 8020",
		"13.96%  3510", "10.42%  4510"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Index(out, "main") > strings.Index(out, "work") {
		t.Errorf("not sorted by normalized range:\n%s", out)
	}
	js, _, err := run(t, "stats", "--db", db, "--by-epoch", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var tb report.StatsTable
	if err := json.Unmarshal([]byte(js), &tb); err != nil {
		t.Fatal(err)
	}
	if len(tb.Sets) != 2 || tb.Sets[0].Name != "epoch=1" || tb.Sets[1].Total != 4020 || tb.Rows[0].Procedure != "main" {
		t.Errorf("%+v", tb)
	}
	out, _, err = run(t, "stats", "--db", db, "--set", "epoch=1,host=a", "--set", "epoch=2,host=b", "--set", "epochs=1-2", "--by", "image")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "set 3 (epochs=1-2) = 8020") || !strings.Contains(out, "/bin/app") {
		t.Errorf("output:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give the sample sets one way"},
		{[]string{"--by-host", "--by-epoch"}, "one way"},
		{[]string{"--set", "epoch=1"}, "two or more"},
		{[]string{"--set", "epoch=1", "--set", "colour=red"}, `unknown key "colour"`},
		{[]string{"--set", "epoch=1", "--set", "epoch"}, "not KEY=VALUE"},
		{[]string{"--set", "epoch=1", "--set", "epochs=3-1"}, "ends before it starts"},
		{[]string{"--set", "epoch=1", "--set", "label=rack=r1"}, "no host in this database has labels"},
		{[]string{"--by-host", "--event", "cycles", "--event", "imiss"}, "one event"},
		{[]string{"--by-host", "--label", "rack=r1"}, "no host in this database has labels"},
		{[]string{"--by-host", "--limit", "-1"}, "--limit"},
	} {
		_, _, err := run(t, append([]string{"stats", "--db", db}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dcpi stats %v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
