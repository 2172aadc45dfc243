package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"dcpi/analysis/report"
	"dcpi/analysis/web"
)

// The browser test's steps for the interactive pages, each checked
// against the command-line tools' numbers over the same cluster.

type (
	doFunc   func(what string, actions ...chromedp.Action[chromedp.Void])
	evalFunc func(js string) string
	shotFunc func(name string)
)

// flameInteractions zooms the flame graph on a click and searches it as
// the reader types, against dcpi stacks' call tree (every box drawn:
// min=0), and reloads the zoomed URL to see the server draw the same.
func flameInteractions(t *testing.T, base, natsURL, hot string, do doFunc, eval evalFunc, shot shotFunc) {
	t.Helper()
	var tree report.TreeNode
	toolJSON(t, &tree, "stacks", "--nats", natsURL, "--json", "--min", "0")
	if len(tree.Children) == 0 {
		t.Fatal("dcpi stacks: an empty call tree")
	}
	first := tree.Children[0] // the widest box of the first level, leftmost
	do("flame min=0", chromedp.Navigate(base+"flame?min=0"), chromedp.WaitVisible(chromedp.CSS("#flame")))
	do("zoom", chromedp.Click(chromedp.CSS(`#flame .fb[data-depth="1"]`)))
	zoomed := eval(`(() => { const b = document.querySelector('#flame .fb[data-depth="1"]');
		const shown = [...document.querySelectorAll('#flame .fb[data-depth="1"]')].filter(x => x.style.display !== 'none').length;
		return [b.dataset.proc, b.dataset.total, b.style.width, shown].join(' '); })()`)
	if want := fmt.Sprintf("%s %d 100%% 1", first.Proc.Procedure, first.Total); zoomed != want {
		t.Errorf("zoomed on the first box: %q, want %q (dcpi stacks)", zoomed, want)
	}
	if loc := eval(`location.search`); !strings.Contains(loc, "focus=") {
		t.Errorf("the zoom is not in the URL: %s", loc)
	}
	shot("flame-zoom")
	do("zoom reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#focused")))
	if f := eval(`document.querySelector('#focused b').textContent`); f != first.Proc.Procedure {
		t.Errorf("the reloaded zoom is on %q, want %q", f, first.Proc.Procedure)
	}

	needle := strings.ToLower(hot)
	do("flame search", chromedp.Navigate(base+"flame?min=0"), chromedp.WaitVisible(chromedp.CSS("#flame")),
		chromedp.SendKeys(chromedp.CSS("#search"), hot))
	want := 100 * float64(matched(&tree, needle)) / float64(tree.Total)
	if got := eval(`document.querySelector('#matched').dataset.pct`); got != strconv.FormatFloat(want, 'f', 2, 64) {
		t.Errorf("searching %q highlights %s%% of the samples; dcpi stacks' tree gives %.2f%%", hot, got, want)
	}
	marked := eval(fmt.Sprintf(`String([...document.querySelectorAll('#flame .fb')].filter(b => b.classList.contains('match') !== b.dataset.proc.toLowerCase().includes(%q)).length)`, needle))
	if marked != "0" {
		t.Errorf("searching %q: %s boxes marked wrongly", hot, marked)
	}
	shot("flame-search")
}

// matched is the samples under the topmost nodes whose procedure
// contains needle, as the search counts them.
func matched(n *report.TreeNode, needle string) uint64 {
	if strings.Contains(strings.ToLower(n.Proc.Procedure), needle) {
		return n.Total
	}
	var sum uint64
	for _, c := range n.Children {
		sum += matched(c, needle)
	}
	return sum
}

// diffFlameInteractions opens the differential flame graph of the two
// hosts from the diff page's link and checks its totals against dcpi
// diff's, then zooms it.
func diffFlameInteractions(t *testing.T, base string, diff report.DiffTable, do doFunc, eval evalFunc, shot shotFunc) {
	t.Helper()
	do("diff flame", chromedp.Navigate(base+"diffflame?a=host=alpha0&b=host=alpha1"), chromedp.WaitVisible(chromedp.CSS("#diffflame")))
	head := eval(`document.querySelector('h1').textContent`)
	want := fmt.Sprintf("A = host=alpha0 (%d samples), B = host=alpha1 (%d samples)", diff.A.Total, diff.B.Total)
	if !strings.Contains(head, want) {
		t.Errorf("differential flame graph: %q, want %q (dcpi diff)", head, want)
	}
	if root := eval(`document.querySelector('#diffflame .fb[data-depth="0"]').dataset.total`); root != strconv.FormatUint(diff.B.Total, 10) {
		t.Errorf("differential flame graph's root holds %s samples, B has %d", root, diff.B.Total)
	}
	do("diff flame zoom", chromedp.Click(chromedp.CSS(`#diffflame .fb[data-depth="1"]`)))
	if w := eval(`document.querySelector('#diffflame .fb[data-depth="1"]').style.width`); w != "100%" {
		t.Errorf("the differential flame graph did not zoom: width %s", w)
	}
	shot("diffflame-zoom")
}

// liveRefresh leaves the epochs page open, cuts an epoch with the
// command-line tool and waits for the page to show it by itself (the
// page reloads under the check, so each look may fail; it looks again).
func liveRefresh(t *testing.T, bctx context.Context, natsURL string, eval evalFunc) {
	t.Helper()
	before := eval(`String(Math.max(...[...document.querySelectorAll('#epochs tr.row')].map(r => Number(r.dataset.epoch))))`)
	n, _ := strconv.Atoi(before)
	if _, stderr, err := run(t, "epoch", "cut", "--nats", natsURL); err != nil {
		t.Fatalf("dcpi epoch cut: %v\n%s", err, stderr)
	}
	js := fmt.Sprintf(`!!document.querySelector('#epochs tr[data-epoch="%d"]')`, n+1)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if shown, err := chromedp.Run(bctx, chromedp.Evaluate[bool](js)); err == nil && shown {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the epochs page did not show epoch %d within a minute of its cut", n+1)
		}
	}
}

// calcTables holds the listing's dcpicalc tables to dcpi calc --json on
// the same procedure: the actual CPI of the summary, a row per
// instruction, and the key to the letters on the page.
func calcTables(t *testing.T, natsURL string, hot report.ProfRow, eval evalFunc, shot shotFunc) {
	t.Helper()
	if eval(`String(!!document.querySelector('#calc-error'))`) == "true" {
		return // no analysis: the page said why, checked above
	}
	var out struct {
		Procedures []struct {
			Image   string            `json:"image"`
			Insns   []json.RawMessage `json:"instructions"`
			Summary struct {
				ActualCPI *float64 `json:"actual_cpi"`
			} `json:"summary"`
		} `json:"procedures"`
	}
	toolJSON(t, &out, "calc", "--nats", natsURL, "--json", hot.Procedure)
	for _, p := range out.Procedures {
		if p.Image != hot.Image {
			continue
		}
		sel := fmt.Sprintf(`.calc-proc[data-image=%q]`, p.Image)
		if n := eval(fmt.Sprintf(`String(document.querySelectorAll('%s .calc-insns tbody tr').length)`, sel)); n != strconv.Itoa(len(p.Insns)) {
			t.Errorf("dcpicalc's table of %s has %s rows, dcpi calc %d instructions", hot.Procedure, n, len(p.Insns))
		}
		if p.Summary.ActualCPI != nil {
			got := eval(fmt.Sprintf(`document.querySelector('%s td[data-cpi="actual"]').textContent.split(' ')[0]`, sel))
			if want := strconv.FormatFloat(*p.Summary.ActualCPI, 'f', 2, 64); got != want {
				t.Errorf("dcpicalc's actual CPI of %s on the page %s, dcpi calc %s", hot.Procedure, got, want)
			}
		}
	}
	if n := eval(`String(document.querySelectorAll('#calc-legend .tag').length)`); n == "0" {
		t.Error("the listing's dcpicalc tables have no key to the letters")
	}
	eval(`document.querySelector('#calc').scrollIntoView(), ''`)
	shot("calc")
	eval(`window.scrollTo(0, 0), ''`)
}

// apiOverCluster reads the JSON API of the demo's server as a dashboard
// would: epoch 1 sealed with both hosts' acknowledgements, the hosts
// registered, and the hot procedures' total dcpi prof's.
func apiOverCluster(t *testing.T, base string, prof report.ProfTable) {
	t.Helper()
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %s, %s", path, resp.Status, resp.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var eps []web.Epoch
	get("api/v1/epochs", &eps)
	if len(eps) == 0 || eps[0].Number != 1 || eps[0].State != "sealed" || strings.Join(eps[0].Acked, " ") != "alpha0 alpha1" {
		t.Errorf("api/v1/epochs: %+v", eps)
	}
	var hosts []web.Host
	get("api/v1/hosts", &hosts)
	if len(hosts) != 2 || hosts[0].Name != "alpha0" || hosts[0].Liveness != "live" {
		t.Errorf("api/v1/hosts: %+v", hosts)
	}
	var top report.ProfTable
	get("api/v1/prof?event=cycles", &top)
	if len(top.Columns) != 1 || top.Columns[0].Total != prof.Columns[0].Total || len(top.Rows) != len(prof.Rows) {
		t.Errorf("api/v1/prof: %d rows, total %v; dcpi prof %d rows, %d", len(top.Rows), top.Columns, len(prof.Rows), prof.Columns[0].Total)
	}
}
