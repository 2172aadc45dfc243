package main

import (
	"encoding/json"
	"strings"
	"testing"

	"dcpi/analysis/report"
)

func TestDiffCommand(t *testing.T) {
	db := setsDB(t)
	// Epoch 2 on host b: work went from 49.5% to 75% of b's samples
	// (z = 0.255 / sqrt(990/2000² + 1500/2000²) = 10.2) and main from
	// 50.5% to 25% (z = -0.255 / sqrt(1010/2000² + 500/2000²) = -13.1);
	// epoch 1, a -> b, moved half a point: noise.
	out, _, err := run(t, "diff", "--db", db, "--a", "epoch=1,host=b", "--b", "epoch=2,host=b")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 7 || !strings.Contains(lines[5], "-25.50  -13.1    main") || !strings.Contains(lines[6], "+25.50   10.2    work") {
		t.Errorf("output:\n%s", out)
	}
	js, _, err := run(t, "diff", "--db", db, "--a", "host=a", "--b", "host=b", "--epoch", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var tb report.DiffTable
	if err := json.Unmarshal([]byte(js), &tb); err != nil {
		t.Fatal(err)
	}
	if tb.A.Total != 2000 || tb.B.Total != 2000 || tb.Quiet != 2 || tb.Rows[0].Significant {
		t.Errorf("%+v", tb)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no " + db + ".old to compare"}, // two databases: DB.old and DB
		{[]string{"--a", "epoch=1"}, "give both profiles"},
		{[]string{"--a", "epoch=1", "--b", "bogus"}, "--b: "},
		{[]string{"--a", "epoch=1", "--b", "epoch=2", "--z", "0"}, "--z"},
	} {
		_, _, err := run(t, append([]string{"diff", "--db", db}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dcpi diff %v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
