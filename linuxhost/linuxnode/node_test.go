package linuxnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/cluster"
	"dcpi/cluster/clustertest"
	"dcpi/config"
	"dcpi/conservation"
	"dcpi/coordinator"
	"dcpi/internal/slogf"
	"dcpi/linuxhost"
	"dcpi/profiledb"
	"dcpi/profiledb/selector"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
)

// needPerf skips unless this process may open system-wide events.
func needPerf(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("perf_event_open on every CPU for every process needs root here")
	}
	h, err := linuxhost.New(linuxhost.Config{PID: -1, RingPages: 1})
	if err != nil {
		t.Skipf("perf_event_open system-wide: %v", err)
	}
	h.Close()
}

// buildHot compiles linuxhost/testdata/hot.c (frame pointers, DWARF).
func buildHot(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	bin := filepath.Join(t.TempDir(), "hot")
	if out, err := exec.Command(gcc, "-O2", "-g", "-fno-omit-frame-pointer", "../testdata/hot.c", "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// waitFor polls cond every 200 ms until it holds; it fails the test
// when ctx ends first, saying what it waited for.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stored is what the cluster holds of q: samples (with an image or
// unknown), and the drop counters (one replica: every read is the
// leader's).
func stored(ctx context.Context, coord *coordinator.Client, q storage.Query) (conservation.Totals, error) {
	tot, err := coord.Totals(ctx, q, false)
	if err != nil {
		return conservation.Totals{}, err
	}
	return conservation.Totals{Stored: tot.Samples + tot.Unknown, Drops: tot.Drops, StackStored: tot.StackSamples, StackDrops: tot.StackDrops}, nil
}

// TestLinuxHostInCluster runs this machine as a host of a test cluster:
// a busy process (hot.c) starts once the host's first samples are
// stored, an epoch is cut through the coordinator once its samples are
// in epoch 1, and the host stops once they are in epoch 2. The host
// registered with its labels and the machine kind; samples are stored
// in both epochs; the cluster holds exactly what the kernel's rings
// held, less the named drops, in the flat and the stack views; hot.c's
// hot_a is its image's hottest procedure; and its file was uploaded.
// The second run's rings are one page, read every 300 ms at 2,000
// samples a second per CPU: the kernel loses samples, and each is in
// the cluster's host.ring_lost.
func TestLinuxHostInCluster(t *testing.T) {
	needPerf(t)
	hot := buildHot(t)
	// Every process's samples go to the cluster: a low rate keeps a
	// loaded machine's cluster (and one under the race detector) ahead.
	t.Run("roomy", func(t *testing.T) { linuxHostInCluster(t, hot, Config{Freq: 99}, false) })
	t.Run("lossy", func(t *testing.T) {
		linuxHostInCluster(t, hot, Config{Freq: 2000, RingPages: 1, Poll: 300 * time.Millisecond}, true)
	})
}

func linuxHostInCluster(t *testing.T, hot string, c Config, lossy bool) {
	hotData, err := os.ReadFile(hot)
	if err != nil {
		t.Fatal(err)
	}
	hotKey, _, err := symbolize.ImageKeyOf(hotData, hot)
	if err != nil {
		t.Fatal(err)
	}
	cl := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a hang's bound, not a measure
	defer cancel()
	coord := cl.Coordinator()
	const host = "linux0"
	creds, err := cl.Credentials(auth.Host, host)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.NATS.URLs, cfg.NATS.Creds, cfg.NATS.CA = []string{cl.URL()}, creds.File, creds.CA
	cfg.Sim.Hostname = host
	cfg.Node.Labels = map[string]string{"rack": "r9", "service": "bench"}
	cfg.Node.Stacks = true
	cfg.Node.PublishEvery, cfg.Node.FlushEvery, cfg.Node.Heartbeat = 0.2, 0.1, 200*time.Millisecond
	freq := c.Freq
	// Files up to 4 MiB uploaded (hot.c's, libc): the machine's big
	// test binaries would only slow the test.
	c.Config, c.MaxUpload, c.Logger = cfg, 4<<20, slogf.Test(t)

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	type result struct {
		rep Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := run(runCtx, c)
		done <- result{rep, err}
	}()
	one := func(epochs ...uint64) storage.Query { return storage.Query{Hosts: []string{host}, Epochs: epochs} }
	hotIn := func(epoch uint64) storage.Query {
		return storage.Query{Hosts: []string{host}, Epochs: []uint64{epoch}, Images: []wire.ImageKey{hotKey}}
	}
	has := func(q storage.Query) func() (bool, error) {
		return func() (bool, error) {
			tot, err := stored(ctx, coord, q)
			return tot.Stored > 0, err
		}
	}
	waitFor(ctx, t, "the Linux host's first stored samples", has(one(1)))

	// The roomy run has a simulated Alpha host beside the real one, in
	// the same epoch, labelled with the same rack: conservation holds
	// for each kind of host, and fleet queries select them by label.
	var alpha *cluster.Host
	if !lossy {
		progs, err := simhost.EmbeddedPrograms([]string{"hashdb"})
		if err != nil {
			t.Fatal(err)
		}
		hc := clustertest.Host(simHost, 1, 0.05, progs)
		hc.Labels = map[string]string{"rack": "r9", "service": "sim"}
		if alpha, err = cl.AddHost(ctx, hc); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Collect(ctx, 0.05, 0); err != nil {
			t.Fatal(err)
		}
		if err := alpha.Publisher().Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	busy := exec.Command(hot, "40000000000") // about 100 s of a CPU: killed before
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	waitFor(ctx, t, "hot.c's samples in epoch 1", has(hotIn(1)))
	next, err := coord.CutEpoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next != 2 {
		t.Fatalf("the cut opened epoch %d, want 2", next)
	}
	waitFor(ctx, t, "hot.c's samples in epoch 2", has(hotIn(2)))
	busy.Process.Kill()
	busy.Wait()
	stopRun()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		t.Fatal("the Linux host did not stop")
	}
	if res.err != nil {
		t.Fatalf("run: %v (daemon %+v)", res.err, res.rep.Daemon)
	}
	rep := res.rep
	t.Logf("%s\ndaemon: %+v", rep, rep.Daemon)
	k := rep.Counts
	if k.Malformed != 0 {
		t.Errorf("%d records did not decode", k.Malformed)
	}
	if rep.Epochs < 1 {
		t.Errorf("the host followed %d epoch cuts, want at least 1", rep.Epochs)
	}

	// Every sample the kernel took is stored or in a named drop counter,
	// exactly: wait while storage makes progress.
	var got conservation.Totals
	last, lastChange := uint64(0), time.Now()
	waitFor(ctx, t, fmt.Sprintf("the cluster to store the %d samples generated", k.Generated), func() (bool, error) {
		var err error
		if got, err = stored(ctx, coord, one()); err != nil {
			return false, err
		}
		n := got.Stored + got.Dropped()
		if n != last {
			last, lastChange = n, time.Now()
		}
		return n >= k.Generated || time.Since(lastChange) > 30*time.Second, nil
	})
	lines, balanced := conservation.Lines(k.Generated, k.Delivered, got, conservation.Views{Source: conservation.LinuxKernel, Stacks: true})
	t.Logf("conservation:\n%s", strings.Join(lines, "\n"))
	if !balanced || got.Stored+got.Dropped() != k.Generated {
		t.Errorf("conservation: stored %d + dropped %d (%v) != generated %d (%d delivered, %d lost)", got.Stored, got.Dropped(), got.Drops, k.Generated, k.Delivered, k.Lost)
	}
	if got.Drops[wire.DropRingLost] != k.Lost {
		t.Errorf("%s: %d stored, the rings lost %d", wire.DropRingLost, got.Drops[wire.DropRingLost], k.Lost)
	}
	if lossy && k.Lost == 0 {
		t.Errorf("one-page rings read every 300 ms at %d/s lost nothing", freq)
	}
	for name := range got.Drops {
		if name == "" {
			t.Errorf("an unnamed drop counter: %v", got.Drops)
		}
	}
	var perEpoch []uint64
	for e := uint64(1); e <= 2; e++ {
		tot, err := stored(ctx, coord, one(e))
		if err != nil {
			t.Fatal(err)
		}
		perEpoch = append(perEpoch, tot.Stored)
		if tot.Stored == 0 {
			t.Errorf("no samples stored in epoch %d", e)
		}
	}
	t.Logf("stored by epoch: %v; generated %d (%d delivered, %d lost in the rings)", perEpoch, k.Generated, k.Delivered, k.Lost)
	// The host acknowledged epoch 1, and the coordinator sealed it.
	waitFor(ctx, t, "epoch 1 sealed with the Linux host's acknowledgement", func() (bool, error) {
		eps, err := coord.Epochs(ctx)
		if err != nil {
			return false, err
		}
		for _, e := range eps {
			if e.Number == 1 && e.State == storage.EpochSealed {
				return slices.ContainsFunc(e.Acks, func(a storage.EpochAck) bool { return a.Host == host && a.Epoch == 1 }), nil
			}
		}
		return false, nil
	})

	// The registry: labels and the machine kind, which calc refuses.
	nodes, err := coord.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var reg *storage.Node
	for i := range nodes {
		if nodes[i].Host == host {
			reg = &nodes[i].Node
		}
	}
	want := map[string]string{"rack": "r9", "service": "bench", profiledb.MachineLabel: "linux-" + runtime.GOARCH}
	if reg == nil {
		t.Fatalf("host %s not registered: %v", host, nodes)
	}
	if !maps.Equal(reg.Labels, want) || reg.CPUs != runtime.NumCPU() || reg.Periods[0] != uint64(time.Second)/freq {
		t.Errorf("registered as %+v; want labels %v, %d CPUs, %d ns a sample", *reg, want, runtime.NumCPU(), uint64(time.Second)/freq)
	}
	nc, err := cl.Connect(auth.Query, "", "test-query")
	if err != nil {
		t.Fatal(err)
	}
	db := profiledb.NewCluster(nc, true)
	if err := profiledb.RefuseMachines(ctx, db, "dcpi-calc"); err == nil || !strings.Contains(err.Error(), "linux-"+runtime.GOARCH) {
		t.Errorf("calc on the cluster with a Linux host: %v", err)
	}

	// The profile: hot.c's hottest procedure is hot_a, in both epochs
	// together.
	table, err := report.Prof(ctx, symbolize.New(db), report.ProfQuery{Filter: storage.Query{Hosts: []string{host}, Images: []wire.ImageKey{hotKey}}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	table.WriteText(&buf)
	t.Logf("hot.c on %s:\n%s", host, buf.String())
	if len(table.Rows) == 0 || table.Rows[0].Procedure != "hot_a" {
		t.Errorf("hot.c's hottest procedure is not hot_a")
	}

	if alpha != nil {
		mixedFleet(ctx, t, db, coord, alpha, host)
	}

	// hot's file was uploaded under its content key.
	js, err := jetstream.New(cl.Conn())
	if err != nil {
		t.Fatal(err)
	}
	up, err := transport.FetchImageFile(ctx, js, hotKey)
	if err != nil || !bytes.Equal(up, hotData) {
		t.Errorf("hot's file in the cluster: %d bytes, %v", len(up), err)
	}
	if rep.Uploads.Uploaded == 0 {
		t.Errorf("no image files uploaded: %s", rep.Uploads)
	}
}

// simHost is the simulated Alpha host beside the Linux one.
const simHost = "alpha0"

// mixedFleet checks a cluster holding a Linux host (linux) and a
// simulated one (alpha, run to its end): the simulated host's samples
// are all stored or counted as dropped, exactly; a label both carry
// selects both, and their totals add up; the machine label tells the two
// kinds apart.
func mixedFleet(ctx context.Context, t *testing.T, db *profiledb.Cluster, coord *coordinator.Client, alpha *cluster.Host, linux string) {
	t.Helper()
	var simTot conservation.Totals
	waitFor(ctx, t, "the simulated host's samples stored", func() (bool, error) {
		var err error
		simTot, err = stored(ctx, coord, storage.Query{Hosts: []string{simHost}})
		return simTot.Stored+simTot.Dropped() >= alpha.Generated(), err
	})
	lines, balanced := conservation.Lines(alpha.Generated(), alpha.Generated(), simTot, conservation.Views{})
	t.Logf("%s: %s", simHost, strings.Join(lines, "; "))
	if !balanced || simTot.Stored == 0 {
		t.Errorf("the simulated host beside the Linux one: %s", strings.Join(lines, "; "))
	}
	linuxTot, err := stored(ctx, coord, storage.Query{Hosts: []string{linux}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sel   string
		hosts []string
	}{
		{`rack="r9"`, []string{linux, simHost}},
		{profiledb.MachineLabel + `="linux-` + runtime.GOARCH + `"`, []string{linux}},
		{profiledb.MachineLabel + `!="linux-` + runtime.GOARCH + `"`, []string{simHost}},
		{`service=~"sim|bench"`, []string{linux, simHost}},
	} {
		ls, err := selector.Parse(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		sel := profiledb.Selection{Labels: ls}
		if err := profiledb.SelectHosts(ctx, db, &sel); err != nil {
			t.Fatalf("%s: %v", c.sel, err)
		}
		got := slices.Sorted(slices.Values(sel.Filter.Hosts))
		if !slices.Equal(got, slices.Sorted(slices.Values(c.hosts))) {
			t.Errorf("%s selects %v, want %v", c.sel, got, c.hosts)
			continue
		}
		tot, err := stored(ctx, coord, sel.Filter)
		if err != nil {
			t.Fatal(err)
		}
		var want uint64
		for _, h := range c.hosts {
			if h == linux {
				want += linuxTot.Stored
			} else {
				want += simTot.Stored
			}
		}
		if tot.Stored != want {
			t.Errorf("%s: %d samples stored, want %d (linux %d, simulated %d)", c.sel, tot.Stored, want, linuxTot.Stored, simTot.Stored)
		}
	}
}

// TestPermissionErrorSaysWhatToChange runs the Linux host as an
// unprivileged user (nobody) in a child process when
// perf_event_paranoid refuses system-wide events to such a user: the
// error names the setting, its value, and the command that changes it,
// before any attempt to reach NATS (the URL here has no server).
func TestPermissionErrorSaysWhatToChange(t *testing.T) {
	if os.Getenv("LINUXNODE_UNPRIVILEGED") == "1" {
		cfg := config.Defaults()
		cfg.NATS.URLs, cfg.Sim.Hostname = []string{"nats://127.0.0.1:1"}, "linux0"
		err := Run(context.Background(), Config{Config: cfg})
		fmt.Printf("ERROR: %v\n", err)
		if errors.Is(err, linuxhost.ErrPermission) {
			os.Exit(3)
		}
		os.Exit(4)
	}
	b, err := os.ReadFile(linuxhost.ParanoidPath)
	if err != nil {
		t.Skipf("no %s: %v", linuxhost.ParanoidPath, err)
	}
	level := strings.TrimSpace(string(b))
	if level == "-1" || level == "0" {
		t.Skipf("perf_event_paranoid is %s: an unprivileged user may profile the machine", level)
	}
	var out []byte
	if os.Geteuid() == 0 {
		out = runAsNobody(t)
	} else {
		cfg := config.Defaults()
		cfg.NATS.URLs, cfg.Sim.Hostname = []string{"nats://127.0.0.1:1"}, "linux0"
		err := Run(context.Background(), Config{Config: cfg})
		if !errors.Is(err, linuxhost.ErrPermission) {
			t.Fatalf("Run without permission: %v, want ErrPermission", err)
		}
		out = []byte("ERROR: " + err.Error())
	}
	msg := string(out)
	t.Logf("%s", msg)
	for _, want := range []string{linuxhost.ParanoidPath, "it is " + level, "sudo sysctl kernel.perf_event_paranoid=-1", "root", "CAP_PERFMON", "0 (or lower"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q", want)
		}
	}
}

// runAsNobody runs this test binary's permission test as user nobody and
// returns its output; it must exit with status 3 (ErrPermission).
func runAsNobody(t *testing.T) []byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// nobody may not read the go tool's build directory (nor t.TempDir's
	// parent): a copy it can run.
	dir, err := os.MkdirTemp("", "linuxnode-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "linuxnode.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^TestPermissionErrorSaysWhatToChange$")
	cmd.Dir = dir
	cmd.Env = []string{"LINUXNODE_UNPRIVILEGED=1", "HOME=" + dir, "PATH=/usr/bin:/bin"}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("as nobody: %v, want exit status 3 (ErrPermission)\n%s", err, out)
	}
	return out
}
