package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"dcpi/analysis/report"
	"dcpi/cluster/demo"
)

// chromiumPath finds a Chromium for the browser test: $DCPI_CHROMIUM, else
// chromium (Debian's package), chromium-browser or google-chrome on PATH.
func chromiumPath() string {
	if p := os.Getenv("DCPI_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestWebInBrowser runs dcpi demo --serve (one replica, two hosts with
// call stacks), opens the URL it prints in headless Chromium, and clicks
// through every page — hot procedures, search, a listing with dcpicalc,
// the flame graph and icicle, diff, epochs, the trend, hosts, the pprof download —
// checking what each shows against the command-line tools' answers over
// the same cluster (dcpi prof, diff and epoch list --nats), and that bad
// filters get a message with status 400. With DCPI_WEB_SCREENSHOTS=1 it
// saves each page's screenshot under docs/web/ (docs/web.md shows them).
func TestWebInBrowser(t *testing.T) {
	chrome := chromiumPath()
	if chrome == "" {
		t.Skip("no Chromium to drive: install Debian's chromium package (or set DCPI_CHROMIUM=/path/to/chrome) to run the browser test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The demo, serving until the test cancels it.
	demoCtx, stopDemo := context.WithCancel(ctx)
	out := &syncBuffer{}
	demoDone := make(chan error, 1)
	go func() {
		demoDone <- demo.Run(demoCtx, out, demo.Options{Hosts: 2, CPUs: 2, Replicas: 1, Aggregators: 1, Seconds: 0.15, CutAt: 0.5,
			Mix: "default", Timing: false, Limit: 5, Stacks: true, HTTPAddr: "127.0.0.1:0", Serve: true})
	}()
	defer func() {
		stopDemo()
		if err := <-demoDone; err != nil {
			t.Errorf("demo: %v\n%s", err, out.String())
		}
	}()
	serving := regexp.MustCompile(`serving the cluster \(NATS at (\S+)\)`)
	var natsURL string
	for natsURL == "" {
		if m := serving.FindStringSubmatch(out.String()); m != nil {
			natsURL = m[1]
			break
		}
		select {
		case err := <-demoDone:
			demoDone <- err
			t.Fatalf("demo ended before serving: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("demo not serving after 2 minutes:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	m := regexp.MustCompile(`web UI at (http://\S+/)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the demo printed no web UI URL:\n%s", out.String())
	}
	base := m[1]

	// What the command-line tools say about the same cluster.
	var prof report.ProfTable
	toolJSON(t, &prof, "prof", "--nats", natsURL, "--json")
	if len(prof.Columns) == 0 || prof.Columns[0].Name != "cycles" || len(prof.Rows) < 10 {
		t.Fatalf("dcpi prof: want a cycles table of 10 rows or more, got %+v", prof.Columns)
	}
	var diff report.DiffTable
	toolJSON(t, &diff, "diff", "--nats", natsURL, "--a", "host=alpha0", "--b", "host=alpha1", "--json")

	shots := os.Getenv("DCPI_WEB_SCREENSHOTS") == "1"
	shotDir := filepath.Join("..", "..", "docs", "web")
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.WindowSize(1280, 860))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}
	shot := func(name string) {
		t.Helper()
		if !shots {
			return
		}
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.MkdirAll(shotDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shotDir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type row struct {
		Proc, Image string
		Counts      []string
	}
	tableRows := func() []row {
		t.Helper()
		var rows []row
		js := `JSON.stringify([...document.querySelectorAll('#prof tr.row')].map(r => ({Proc: r.dataset.proc, Image: r.dataset.image,
			Counts: [...r.querySelectorAll('td.count')].map(c => c.textContent)})))`
		if err := json.Unmarshal([]byte(eval(js)), &rows); err != nil {
			t.Fatal(err)
		}
		return rows
	}

	// Hot procedures: dcpi prof's rows, in its order, with its counts.
	do("top", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#prof")))
	rows := tableRows()
	if len(rows) != min(len(prof.Rows), 50) {
		t.Fatalf("top page shows %d rows, dcpi prof has %d", len(rows), len(prof.Rows))
	}
	for i, r := range rows {
		want := prof.Rows[i]
		if r.Proc != want.Procedure || r.Image != want.Image || len(r.Counts) != 1 || r.Counts[0] != strconv.FormatUint(want.Counts[0], 10) {
			t.Fatalf("top page row %d: %+v; dcpi prof: %s %s %d", i, r, want.Procedure, want.Image, want.Counts[0])
		}
	}
	total := eval(`document.querySelector('#totals .total').dataset.total`)
	if total != strconv.FormatUint(prof.Columns[0].Total, 10) {
		t.Errorf("top page total %s, dcpi prof's %d", total, prof.Columns[0].Total)
	}
	shot("top")

	// The search box narrows the rows and goes into the URL.
	do("search", chromedp.SendKeys(chromedp.CSS("#search"), "main\n"), chromedp.WaitVisible(chromedp.CSS("#matched")))
	var mains []string
	for _, r := range prof.Rows {
		if strings.Contains(strings.ToLower(r.Procedure+" "+r.Image), "main") {
			mains = append(mains, r.Procedure+" "+r.Image)
		}
	}
	var got []string
	for _, r := range tableRows() {
		got = append(got, r.Proc+" "+r.Image)
	}
	if !slices.Equal(got, mains) {
		t.Errorf("search for main shows %q, want %q", got, mains)
	}
	if loc := eval(`location.search`); !strings.Contains(loc, "q=main") {
		t.Errorf("the search is not in the URL: %s", loc)
	}

	// A listing: the hottest procedure's samples, and dcpicalc on it.
	hot := prof.Rows[0]
	do("list", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#prof")),
		chromedp.Click(chromedp.CSS("#prof tr.row td.proc a")), chromedp.WaitVisible(chromedp.CSS("section.listing")))
	listed := eval(fmt.Sprintf(`document.querySelector('section.listing[data-image=%q] .total[data-event="cycles"]').dataset.count`, hot.Image))
	if listed != strconv.FormatUint(hot.Counts[0], 10) {
		t.Errorf("listing of %s shows %s cycles samples, dcpi prof %d", hot.Procedure, listed, hot.Counts[0])
	}
	if n := eval(`String(document.querySelectorAll('section.listing tr.insn').length)`); n == "0" {
		t.Errorf("listing of %s has no instructions", hot.Procedure)
	}
	if calc := eval(`(document.querySelector('#calc-text') || document.querySelector('#calc-error')).textContent`); !strings.Contains(calc, "CPI") {
		t.Errorf("listing of %s: no dcpicalc CPI: %q", hot.Procedure, calc)
	}
	calcTables(t, natsURL, hot, eval, shot)
	shot("list")

	// Flame graph and icicle: every sample's stack (the demo's stacks
	// balance, so the root holds the flat profile's total).
	do("flame", chromedp.Click(chromedp.CSS("#nav-flame")), chromedp.WaitVisible(chromedp.CSS("#flame")))
	if root := eval(`document.querySelector('#flame .fb[data-depth="0"]').dataset.total`); root != total {
		t.Errorf("flame graph root holds %s samples, dcpi prof %s", root, total)
	}
	if eval(`String(!!document.querySelector('#flat'))`) != "false" {
		t.Errorf("flame graph says no stacks were recorded")
	}
	leaf := eval(fmt.Sprintf(`String([...document.querySelectorAll('#flame .fb')].some(b => b.dataset.proc === %q))`, hot.Procedure))
	if leaf != "true" {
		t.Errorf("flame graph has no box for %s", hot.Procedure)
	}
	shot("flame")
	flameInteractions(t, base, natsURL, hot.Procedure, do, eval, shot)
	do("icicle", chromedp.Navigate(base+"flame"), chromedp.WaitVisible(chromedp.CSS("#flame")))
	do("icicle", chromedp.Click(chromedp.CSS("#orient")), chromedp.WaitVisible(chromedp.CSS("#flame")))
	if loc := eval(`location.search`); !strings.Contains(loc, "view=icicle") {
		t.Errorf("icicle URL %s", loc)
	}
	shot("icicle")

	// Diff of the two hosts (the page's default): dcpi diff's rows.
	do("diff", chromedp.Click(chromedp.CSS("#nav-diff")), chromedp.WaitVisible(chromedp.CSS("#diff")))
	var diffRows []struct {
		Proc, Sig, Mark, A, B string
	}
	js := `JSON.stringify([...document.querySelectorAll('#diff tr.row')].map(r => ({Proc: r.dataset.proc, Sig: r.dataset.significant,
		Mark: r.cells[0].textContent, A: r.cells[1].textContent, B: r.cells[2].textContent})))`
	if err := json.Unmarshal([]byte(eval(js)), &diffRows); err != nil {
		t.Fatal(err)
	}
	if len(diffRows) != len(diff.Rows) {
		t.Fatalf("diff page has %d rows, dcpi diff %d", len(diffRows), len(diff.Rows))
	}
	for i, r := range diffRows {
		w := diff.Rows[i]
		mark := map[bool]string{true: "●", false: "~"}[w.Significant]
		if r.Proc != w.Procedure || r.A != strconv.FormatUint(w.CountA, 10) || r.B != strconv.FormatUint(w.CountB, 10) ||
			r.Sig != strconv.FormatBool(w.Significant) || r.Mark != mark {
			t.Fatalf("diff row %d: %+v; dcpi diff: %+v", i, r, w)
		}
	}
	shot("diff")

	diffFlameInteractions(t, base, diff, do, eval, shot)

	// Epochs: epoch 1 sealed with both hosts' acknowledgements.
	do("epochs", chromedp.Click(chromedp.CSS("#nav-epochs")), chromedp.WaitVisible(chromedp.CSS("#epochs")))
	if st := eval(`document.querySelector('#epochs tr[data-epoch="1"]').dataset.state`); st != "sealed" {
		t.Errorf("epoch 1 is %s on the page", st)
	}
	if acks := eval(`document.querySelector('#epochs tr[data-epoch="1"] .acks').textContent`); acks != "alpha0 alpha1" {
		t.Errorf("epoch 1 acknowledged by %q on the page", acks)
	}
	shot("epochs")
	apiOverCluster(t, base, prof)
	liveRefresh(t, bctx, natsURL, eval)

	// Trend: the chart inline (the total and a path per top procedure),
	// and the epochs' samples summing to dcpi prof's cycles total.
	// Since the cut above, a page may reload itself (live.js) while the
	// test waits on it, and a node found before the reload is gone: try
	// again, a few times, as a reader would.
	var trendErr error
	for range 5 {
		if trendErr = chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#nav-trend")), chromedp.WaitVisible(chromedp.CSS("#trend-chart svg"))); trendErr == nil {
			break
		}
		time.Sleep(time.Second)
	}
	if trendErr != nil {
		t.Fatalf("trend: %v", trendErr)
	}
	if n := eval(`String(document.querySelectorAll('#trend-chart svg path').length)`); n != "6" {
		t.Errorf("the trend chart has %s paths, want 6 (the total and the top 5 procedures)", n)
	}
	perEpoch := eval(`String([...document.querySelectorAll('#trend tr.row')].reduce((s, r) => s + Number(r.dataset.samples), 0))`)
	if perEpoch != strconv.FormatUint(prof.Columns[0].Total, 10) {
		t.Errorf("the trend's epochs sum to %s samples, dcpi prof's total is %d", perEpoch, prof.Columns[0].Total)
	}

	// Hosts: both, their samples summing to the fleet's.
	do("hosts", chromedp.Click(chromedp.CSS("#nav-hosts")), chromedp.WaitVisible(chromedp.CSS("#hosts")))
	hosts := eval(`[...document.querySelectorAll('#hosts tr.row')].map(r => r.dataset.host + '=' + r.dataset.samples).join(' ')`)
	var sum uint64
	var names []string
	for _, hs := range strings.Fields(hosts) {
		name, n, _ := strings.Cut(hs, "=")
		v, _ := strconv.ParseUint(n, 10, 64)
		sum += v
		names = append(names, name)
	}
	if !slices.Equal(names, []string{"alpha0", "alpha1"}) || strconv.FormatUint(sum, 10) != total {
		t.Errorf("hosts page: %s; want alpha0 and alpha1 summing to %s", hosts, total)
	}
	if live := eval(`document.querySelector('#hosts tr.row').cells[4].textContent`); live != "live" {
		t.Errorf("hosts page: alpha0 is %q, want live", live)
	}
	shot("hosts")

	// The pprof download: dcpi pprof's export, the same samples.
	dir := t.TempDir()
	progress := chromedp.Events(bctx, browser.DownloadProgress)
	do("pprof", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: new(true)})
		return err
	}), chromedp.Click(chromedp.CSS("#nav-pprof")))
	var file string
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("pprof download: %v", err)
		}
		if ev.State == browser.DownloadProgressStateCompleted {
			file = filepath.Join(dir, ev.GUID)
			break
		}
		if ev.State == browser.DownloadProgressStateCanceled {
			t.Fatalf("pprof download canceled")
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		t.Fatalf("pprof download: %v", err)
	}
	col := slices.IndexFunc(p.SampleType, func(st *profile.ValueType) bool { return st.Type == "cycles_samples" })
	var samples int64
	for _, s := range p.Sample {
		samples += s.Value[col]
	}
	if col < 0 || strconv.FormatInt(samples, 10) != total {
		t.Errorf("pprof download holds %d cycles samples (type index %d), dcpi prof %s", samples, col, total)
	}

	// Bad filters: the page says why, with status 400.
	for _, c := range []struct{ query, want string }{
		{"?host=nope", "no samples for host nope; hosts in the cluster: alpha0, alpha1"},
		{"?event=bogus", `unknown event "bogus"`},
		{"?epochs=3-1", "range ends before it starts"},
		{"flame?view=sideways", `view="sideways": want flame or icicle`},
		{"?limit=%zz", "malformed query string"},
	} {
		resp, err := http.Get(base + strings.TrimPrefix(c.query, "/"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", c.query, resp.StatusCode)
		}
		do("bad filter", chromedp.Navigate(base+c.query), chromedp.WaitVisible(chromedp.CSS("#error")))
		if msg := eval(`document.querySelector('#error').textContent`); !strings.Contains(msg, c.want) {
			t.Errorf("%s: the page says %q, want %q", c.query, msg, c.want)
		}
		if c.query == "?host=nope" {
			shot("bad-filter")
		}
	}
}

// toolJSON runs a dcpi command and decodes its JSON output into v.
func toolJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, stderr, err := run(t, args...)
	if err != nil {
		t.Fatalf("dcpi %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("dcpi %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
