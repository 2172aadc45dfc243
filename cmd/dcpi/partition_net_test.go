package main

// The partition test's network: every role of the cluster in a network
// namespace of its own, each joined by a veth pair to one bridge, and
// partitions made and healed with nftables inside the namespaces.
//
// Why nftables drops and not a veth taken down: a link that goes down
// removes the namespace's route, so the kernel fails every send at once
// (ENETUNREACH) and the process learns of the fault immediately; in a
// partition packets vanish and a process learns only from its own
// timeouts (Raft's heartbeats, NATS's pings and request timeouts, TCP's
// retransmissions), which is what the roles must survive. A drop is also
// per pair of roles, so a partition can leave both sides working inside
// themselves (the leader with a minority on one side, the majority and
// NATS on the other) and the test itself, on the bridge, keeps observing
// both. Each namespace has a table inet dcpi_partition whose input chain
// drops packets from the addresses in its set cut: cutting A from B puts
// B's address in A's set and A's in B's, so both directions are lost
// where they arrive; healing empties the sets. Connections established
// before the cut are not reset: TCP retransmits into the void until the
// heal, as across a failed switch.
//
// Names: every namespace and interface the test makes starts with the
// lab's prefix (dcp, the test process's pid in hex, a letter per lab), so
// parallel runs do not collide; the addresses are one /24 of 10.237/16
// that no interface on the machine uses. Everything is removed in
// t.Cleanup, also when the test fails. A run that is killed (SIGKILL, a
// test timeout) runs no cleanup, so the first lab of every test process
// first sweeps what earlier runs left (sweepStaleLabs): the namespaces
// and interfaces whose names are exactly the lab's, made by a test
// process that is no longer running. The nftables tables live inside the
// namespaces and go with them; the roles' processes, dying with the test
// (failure_proc_test.go's Pdeathsig), hold no namespace for long.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// labSeq numbers the labs of one test process.
var labSeq atomic.Int32

// netLab is one test's network.
type netLab struct {
	t      *testing.T
	prefix string
	subnet string // the /24's first three octets, "10.237.K"
	bridge string
	ipCmd  string // the ip command (iproute2)
	nftCmd string
	spaces map[string]*netSpace // by role name
	order  []*netSpace
}

// netSpace is one role's namespace.
type netSpace struct {
	role string
	ns   string // the namespace's name
	veth string // the bridge's end of the veth pair
	addr string // the role's IPv4 address
}

// partitionPrereqs says why this machine cannot run the partition tests,
// or "" when it can: they need root and the ip and nft commands.
func partitionPrereqs() string {
	if os.Geteuid() != 0 {
		return "the partition tests make network namespaces, veth pairs and nftables rules: they need root (run go test as root)"
	}
	for _, cmd := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return fmt.Sprintf("the partition tests need the %s command (iproute2, nftables): %v", cmd, err)
		}
	}
	return ""
}

// newNetLab makes the bridge the roles' namespaces join; the test process
// reaches every role through the bridge's own address (.254). It
// registers the removal of everything the lab makes.
func newNetLab(t *testing.T) *netLab {
	t.Helper()
	ipCmd, _ := exec.LookPath("ip")
	nftCmd, _ := exec.LookPath("nft")
	sweepOnce.Do(func() { sweepStaleLabs(t, ipCmd) })
	seq := labSeq.Add(1)
	l := &netLab{t: t, prefix: labPrefix(os.Getpid(), seq), ipCmd: ipCmd, nftCmd: nftCmd,
		spaces: map[string]*netSpace{}}
	l.bridge = l.prefix + "br"
	used, err := l.output(ipCmd, "-4", "-o", "addr", "show")
	if err != nil {
		t.Fatal(err)
	}
	for k := (os.Getpid()*7+int(seq))%250 + 1; ; k = k%250 + 1 {
		s := fmt.Sprintf("10.237.%d", k)
		if !strings.Contains(used, " "+s+".") {
			l.subnet = s
			break
		}
	}
	t.Cleanup(l.remove)
	l.must(ipCmd, "link", "add", l.bridge, "type", "bridge")
	l.must(ipCmd, "addr", "add", l.subnet+".254/24", "dev", l.bridge)
	l.must(ipCmd, "link", "set", l.bridge, "up")
	t.Logf("partition lab %s: bridge %s at %s.254/24", l.prefix, l.bridge, l.subnet)
	return l
}

// join returns a role's namespace, making it on first use: the
// namespace, a veth pair (eth0 inside, the other end on the bridge), the
// next address of the subnet, loopback up, and the empty cut table.
func (l *netLab) join(role string) *netSpace {
	l.t.Helper()
	if s, ok := l.spaces[role]; ok {
		return s
	}
	n := len(l.order) + 1
	if n > 250 {
		l.t.Fatalf("partition lab: more than 250 roles")
	}
	s := &netSpace{role: role, ns: l.prefix + "-" + role, veth: fmt.Sprintf("%sv%d", l.prefix, n),
		addr: fmt.Sprintf("%s.%d", l.subnet, n)}
	l.spaces[role] = s
	l.order = append(l.order, s)
	l.must(l.ipCmd, "netns", "add", s.ns)
	l.must(l.ipCmd, "link", "add", s.veth, "type", "veth", "peer", "name", "eth0", "netns", s.ns)
	l.must(l.ipCmd, "link", "set", s.veth, "master", l.bridge, "up")
	l.must(l.ipCmd, "-n", s.ns, "addr", "add", s.addr+"/24", "dev", "eth0")
	l.must(l.ipCmd, "-n", s.ns, "link", "set", "eth0", "up")
	l.must(l.ipCmd, "-n", s.ns, "link", "set", "lo", "up")
	l.nft(s, "-f", "-", `table inet dcpi_partition {
	set cut { type ipv4_addr; }
	chain input { type filter hook input priority 0; policy accept; ip saddr @cut drop; }
}`)
	return s
}

// cut partitions the roles in a from those in b, both directions; the
// roles on either side still reach each other, and the test reaches all.
func (l *netLab) cut(a, b []string) {
	l.t.Helper()
	for _, x := range a {
		for _, y := range b {
			if x == y {
				l.t.Fatalf("partition lab: %s on both sides of a cut", x)
			}
			sx, sy := l.join(x), l.join(y)
			l.nft(sx, "add", "element", "inet", "dcpi_partition", "cut", "{ "+sy.addr+" }")
			l.nft(sy, "add", "element", "inet", "dcpi_partition", "cut", "{ "+sx.addr+" }")
		}
	}
}

// isolate cuts role from every other role of the lab.
func (l *netLab) isolate(role string) {
	l.t.Helper()
	l.cut([]string{role}, l.others(role))
}

// others returns every role of the lab but those given.
func (l *netLab) others(roles ...string) []string {
	var out []string
	for _, s := range l.order {
		if !slices.Contains(roles, s.role) {
			out = append(out, s.role)
		}
	}
	return out
}

// heal removes every cut.
func (l *netLab) heal() {
	l.t.Helper()
	for _, s := range l.order {
		l.nft(s, "flush", "set", "inet", "dcpi_partition", "cut")
	}
}

// healQuietly removes every cut, as heal, but only logs what fails: it
// runs in t.Cleanup.
func (l *netLab) healQuietly() {
	for _, s := range l.order {
		cmd := exec.Command(l.ipCmd, "netns", "exec", s.ns, l.nftCmd, "flush", "set", "inet", "dcpi_partition", "cut")
		if out, err := cmd.CombinedOutput(); err != nil {
			l.t.Logf("partition lab cleanup: heal %s: %v: %s", s.ns, err, bytes.TrimSpace(out))
		}
	}
}

// remove deletes the namespaces (their eth0 with them, and so the veth
// pairs) and the bridge. A namespace whose processes still run lives on
// unnamed until they exit; the test stops them first (its cleanup runs
// before this one, registered earlier).
func (l *netLab) remove() {
	for _, s := range l.order {
		if err := l.run(l.ipCmd, "netns", "del", s.ns); err != nil {
			l.t.Errorf("partition lab cleanup: %v", err)
		}
		// Normally gone with the namespace's end of the pair.
		if _, err := l.output(l.ipCmd, "link", "show", s.veth); err == nil {
			l.run(l.ipCmd, "link", "del", s.veth)
		}
	}
	if err := l.run(l.ipCmd, "link", "del", l.bridge); err != nil {
		l.t.Errorf("partition lab cleanup: %v", err)
	}
}

// nft runs nft in a role's namespace, stdin the last argument when the
// arguments are "-f", "-", script.
func (l *netLab) nft(s *netSpace, args ...string) {
	l.t.Helper()
	var stdin string
	if len(args) == 3 && args[0] == "-f" && args[1] == "-" {
		stdin, args = args[2], args[:2]
	}
	cmd := exec.Command(l.ipCmd, append([]string{"netns", "exec", s.ns, l.nftCmd}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		l.t.Fatalf("nft %s in %s: %v: %s", strings.Join(args, " "), s.ns, err, bytes.TrimSpace(out))
	}
}

func (l *netLab) must(name string, args ...string) {
	l.t.Helper()
	if err := l.run(name, args...); err != nil {
		l.t.Fatal(err)
	}
}

func (l *netLab) run(name string, args ...string) error {
	_, err := l.output(name, args...)
	return err
}

func (l *netLab) output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// labPrefix is the name prefix of a test process's seq'th lab (from 1).
// Interface names have at most 15 bytes: dcp, up to 7 hex digits of a
// pid (pid_max is at most 2^22), the letter, and "br" or v and a role's
// number up to 250 fit.
func labPrefix(pid int, seq int32) string {
	return fmt.Sprintf("dcp%x%c", pid, 'a'+rune(seq-1)%26)
}

// The names a lab makes, as labPrefix and join spell them: the bridge
// (prefix br), the bridge's ends of the veth pairs (prefix v and the
// role's number), the namespaces (prefix, a dash, the role).
var (
	labLinkName  = regexp.MustCompile(`^dcp([0-9a-f]{1,7})[a-z](?:br|v[0-9]{1,3})$`)
	labNetnsName = regexp.MustCompile(`^dcp([0-9a-f]{1,7})[a-z]-[A-Za-z0-9_.-]+$`)
)

// labOwner returns the pid of the test process whose lab made the
// interface (link true) or namespace of this name, and false for every
// name a lab does not make: the sweep removes nothing else.
func labOwner(name string, link bool) (pid int, ours bool) {
	re := labNetnsName
	if link {
		re = labLinkName
	}
	m := re.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	p, err := strconv.ParseInt(m[1], 16, 64)
	if err != nil || p <= 0 {
		return 0, false
	}
	return int(p), true
}

// staleLabObjects picks, from the machine's namespaces and interfaces,
// those a lab made whose test process is not running (running says
// whether it is): a parallel run's lab, or this process's own, is left
// alone.
func staleLabObjects(netns, links []string, running func(pid int) bool) (staleNetns, staleLinks []string) {
	pick := func(names []string, link bool) []string {
		var out []string
		for _, n := range names {
			if pid, ours := labOwner(n, link); ours && !running(pid) {
				out = append(out, n)
			}
		}
		return out
	}
	return pick(netns, false), pick(links, true)
}

// testProcessRunning says whether pid is a running Go test binary (its
// command name ends in .test, as go test names them): a pid that ran a
// killed test and now runs something else counts as not running.
func testProcessRunning(pid int) bool {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return false
	}
	return strings.HasSuffix(strings.TrimSpace(string(comm)), ".test")
}

// sweepOnce runs the sweep at the first lab of a test process.
var sweepOnce sync.Once

// sweepStaleLabs removes what killed earlier runs left: their interfaces
// first (deleting a bridge's end of a veth pair deletes the pair, at
// once, where a deleted namespace's interfaces go asynchronously), then
// their namespaces, with the nftables tables inside. What fails to go is
// logged, not fatal: a leftover costs one /24 of 10.237/16, which
// newNetLab skips.
func sweepStaleLabs(t *testing.T, ipCmd string) {
	t.Helper()
	netns, links, err := listNetnsAndLinks(ipCmd)
	if err != nil {
		t.Logf("partition lab: not sweeping earlier runs' leftovers: %v", err)
		return
	}
	staleNetns, staleLinks := staleLabObjects(netns, links, testProcessRunning)
	for _, link := range staleLinks {
		if out, err := exec.Command(ipCmd, "link", "del", link).CombinedOutput(); err != nil {
			t.Logf("partition lab: sweeping interface %s: %v: %s", link, err, bytes.TrimSpace(out))
			continue
		}
		t.Logf("partition lab: removed interface %s, left by a run that was killed", link)
	}
	for _, ns := range staleNetns {
		if out, err := exec.Command(ipCmd, "netns", "del", ns).CombinedOutput(); err != nil {
			t.Logf("partition lab: sweeping namespace %s: %v: %s", ns, err, bytes.TrimSpace(out))
			continue
		}
		t.Logf("partition lab: removed namespace %s, left by a run that was killed", ns)
	}
}

// listNetnsAndLinks returns the names of the machine's network namespaces
// (ip netns) and of the interfaces of the test's own namespace.
func listNetnsAndLinks(ipCmd string) (netns, links []string, err error) {
	var spaces []struct {
		Name string `json:"name"`
	}
	if err := ipJSON(ipCmd, &spaces, "netns", "list"); err != nil {
		return nil, nil, err
	}
	for _, s := range spaces {
		netns = append(netns, s.Name)
	}
	var ifaces []struct {
		Name string `json:"ifname"`
	}
	if err := ipJSON(ipCmd, &ifaces, "link", "show"); err != nil {
		return nil, nil, err
	}
	for _, i := range ifaces {
		links = append(links, i.Name)
	}
	return netns, links, nil
}

// ipJSON runs ip -j with args into v; ip prints nothing at all for an
// empty list of namespaces (or [] in newer versions), an empty v.
func ipJSON(ipCmd string, v any, args ...string) error {
	out, err := exec.Command(ipCmd, append([]string{"-j"}, args...)...).Output()
	if err != nil {
		return fmt.Errorf("ip -j %s: %w", strings.Join(args, " "), err)
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("ip -j %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
