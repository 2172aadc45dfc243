package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLabOwner: the sweep's notion of "ours" is exactly the names a lab
// makes, with the pid of the process that made them; anything else on
// the machine, however close, is not ours.
func TestLabOwner(t *testing.T) {
	p := labPrefix(0x1f2e3, 2)
	if p != "dcp1f2e3b" {
		t.Fatalf("labPrefix(0x1f2e3, 2) = %q", p)
	}
	for _, c := range []struct {
		name string
		link bool
		pid  int // 0: not ours
	}{
		{p + "br", true, 0x1f2e3},
		{p + "v1", true, 0x1f2e3},
		{p + "v250", true, 0x1f2e3},
		{labPrefix(0x3fffff, 26) + "v12", true, 0x3fffff}, // the longest: 15 bytes
		{labPrefix(0xabc, 1) + "br", true, 0xabc},         // the letter a is also a hex digit
		{p + "-nats", false, 0x1f2e3},
		{p + "-c1", false, 0x1f2e3},
		{p + "-agg2", false, 0x1f2e3},
		{p + "-host-07", false, 0x1f2e3},

		{p + "-nats", true, 0},      // a namespace's name is no interface of ours
		{p + "br", false, 0},        // nor a bridge's a namespace of ours
		{"eth0", true, 0},           // the machine's own
		{"lo", true, 0},             //
		{"docker0", true, 0},        //
		{"p1f2e3bbr", true, 0},      // the old prefix, and anyone's p…
		{"dcp1f2e3bbr0", true, 0},   // more after the suffix
		{"dcp1f2e3bv", true, 0},     // a veth with no number
		{"dcp1f2e3bv1234", true, 0}, // more roles than a lab makes
		{"xdcp1f2e3bbr", true, 0},   // not at the start
		{"dcpbr", true, 0},          // no pid
		{"dcp0abr", true, 0},        // pid 0
		{"dcp12345678abr", true, 0}, // more hex digits than a pid has
		{"dcp1f2e3b-", false, 0},    // no role
		{"dcp1f2e3b", false, 0},     //
		{"dcp1f2e3bx", false, 0},    // no dash
		{"dcp1f2e3B-nats", false, 0},
		{"dcp1f2e3b-nats x", false, 0},
		{"cni-1234abcd", false, 0},
	} {
		pid, ours := labOwner(c.name, c.link)
		if ours != (c.pid != 0) || pid != c.pid {
			t.Errorf("labOwner(%q, link %v) = %#x, %v; want %#x, %v", c.name, c.link, pid, ours, c.pid, c.pid != 0)
		}
	}
}

// TestStaleLabObjects: of the names that are ours, only those of a test
// process that is not running are stale.
func TestStaleLabObjects(t *testing.T) {
	dead, alive := labPrefix(0x77, 1), labPrefix(0x88, 3)
	netns := []string{dead + "-nats", alive + "-nats", "other", dead + "-c1"}
	links := []string{"lo", "eth0", dead + "br", dead + "v1", alive + "br", alive + "v1", "p77abr"}
	running := func(pid int) bool { return pid == 0x88 }
	ns, ls := staleLabObjects(netns, links, running)
	if want := []string{dead + "-nats", dead + "-c1"}; !slices.Equal(ns, want) {
		t.Errorf("stale namespaces %v, want %v", ns, want)
	}
	if want := []string{dead + "br", dead + "v1"}; !slices.Equal(ls, want) {
		t.Errorf("stale interfaces %v, want %v", ls, want)
	}
	if ns, ls := staleLabObjects(netns, links, func(int) bool { return true }); ns != nil || ls != nil {
		t.Errorf("with every owner running: stale %v, %v; want none", ns, ls)
	}
}

// TestTestProcessRunning: this process is a running test binary; a pid
// with no process is not.
func TestTestProcessRunning(t *testing.T) {
	if _, err := os.Stat("/proc/self/comm"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if !testProcessRunning(os.Getpid()) {
		t.Errorf("testProcessRunning(own pid %d) = false", os.Getpid())
	}
	if pid := unusedPid(t); testProcessRunning(pid) {
		t.Errorf("testProcessRunning(%d) = true for a pid with no process", pid)
	}
}

// TestPartitionSweep makes what a killed run leaves (a namespace with its
// nftables table, a veth pair into it, a bridge, all named for a pid with
// no process), a namespace of a running lab (this process's) and one that
// is not the harness's, and checks that the sweep removes the first and
// only those.
func TestPartitionSweep(t *testing.T) {
	if os.Getenv("DCPI_PARTITION_TEST") != "1" {
		t.Skip("makes network namespaces and interfaces: runs only with DCPI_PARTITION_TEST=1, as root")
	}
	if why := partitionPrereqs(); why != "" {
		t.Fatalf("DCPI_PARTITION_TEST=1 asks for the partition tests, but %s", why)
	}
	ipCmd, _ := exec.LookPath("ip")
	nftCmd, _ := exec.LookPath("nft")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
	}
	stale := labPrefix(unusedPid(t), 1)
	live := labPrefix(os.Getpid(), 26) // a letter newNetLab reaches only at its 26th lab
	other := fmt.Sprintf("dcpisweep%x", os.Getpid())
	made := []string{stale + "-nats", live + "-nats", other}
	t.Cleanup(func() {
		for _, ns := range made {
			exec.Command(ipCmd, "netns", "del", ns).Run()
		}
		for _, l := range []string{stale + "br", stale + "v1"} {
			exec.Command(ipCmd, "link", "del", l).Run()
		}
	})
	for _, ns := range made {
		run(ipCmd, "netns", "add", ns)
	}
	run(ipCmd, "link", "add", stale+"br", "type", "bridge")
	run(ipCmd, "link", "add", stale+"v1", "type", "veth", "peer", "name", "eth0", "netns", stale+"-nats")
	run(ipCmd, "link", "set", stale+"v1", "master", stale+"br")
	run(ipCmd, "netns", "exec", stale+"-nats", nftCmd, "add", "table", "inet", "dcpi_partition")

	sweepStaleLabs(t, ipCmd)

	netns, links, err := listNetnsAndLinks(ipCmd)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{stale + "-nats"} {
		if slices.Contains(netns, gone) {
			t.Errorf("the sweep left the stale namespace %s", gone)
		}
	}
	for _, gone := range []string{stale + "br", stale + "v1"} {
		if slices.Contains(links, gone) {
			t.Errorf("the sweep left the stale interface %s", gone)
		}
	}
	for _, kept := range []string{live + "-nats", other} {
		if !slices.Contains(netns, kept) {
			t.Errorf("the sweep removed %s, which is not stale or not the harness's", kept)
		}
	}
}

// unusedPid returns a pid that no process has now (and, being near
// pid_max, is unlikely to be given out during the test).
func unusedPid(t *testing.T) int {
	t.Helper()
	max := 1 << 22
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			max = n
		}
	}
	for pid := max - 1; pid > max/2; pid-- {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return pid
		}
	}
	t.Fatal("no unused pid")
	return 0
}
