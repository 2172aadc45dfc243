package main

// The rolling upgrade test: the failure test's cluster of real dcpi
// processes (failure_test.go), started from the previous release's
// binary, upgraded to this tree's role by role while the hosts sample.
//
// Run it with
//
//	DCPI_UPGRADE_TEST=1 go test -run TestRollingUpgrade -v -timeout 20m ./cmd/dcpi/
//
// It builds the previous release from git (DCPI_UPGRADE_FROM names another
// commit or tag; the default, upgradeFrom, moves to each release as it is
// made) and this tree, a few minutes on a 2-core machine. The order is the
// one docs/deploy.md gives an operator, with a node upgraded first so
// that a node newer than the cluster and one older than it both run
// against a cluster of the other version:
//
//  1. every role runs the previous release; the cluster ingests;
//  2. node alpha2 is upgraded (a newer node, an older cluster);
//  3. the replicas, one at a time, each after the cluster has ingested
//     again under a leader: stop (SIGTERM), start the new binary on the
//     same data directory;
//  4. the aggregators, one at a time; then the NATS server, on its
//     directory and port;
//  5. node alpha1 (an older node all along steps 3 and 4).
//
// Each node upgrade is a clean stop and a new run of the same host, which
// resumes its batch streams. Then, as after the failure test's faults:
// exact conservation per host, every epoch but the last sealed, the
// stream drained, and identical replicas.

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dcpi/internal/testrand"
)

// upgradeFrom is the previous release the test upgrades from.
const upgradeFrom = "5fe036b35790f4a22dce37280f5a64ccaeae70d7"

func TestRollingUpgrade(t *testing.T) {
	if os.Getenv("DCPI_UPGRADE_TEST") != "1" {
		t.Skip("the rolling upgrade test builds two releases and runs real processes: " +
			"DCPI_UPGRADE_TEST=1 go test -run TestRollingUpgrade -v -timeout 20m ./cmd/dcpi/")
	}
	from := upgradeFrom
	if v := os.Getenv("DCPI_UPGRADE_FROM"); v != "" {
		from = v
	}
	c := newFailureTest(t) // builds this tree's dcpi as c.bin
	newBin := c.bin
	oldBin, err := buildRelease(from, c.dir)
	if err != nil {
		t.Fatalf("building the previous release %s: %v", from, err)
	}
	c.logf("built the previous release (%s) as %s", from, oldBin)
	c.rng = testrand.New(t)
	c.bin = oldBin
	c.startRoles()
	c.waitIngest(faultStep)

	node := func(host string) *proc {
		for _, p := range c.nodes {
			if p.name == host {
				return p
			}
		}
		t.Fatalf("no node %s", host)
		return nil
	}
	c.upgrade(node("alpha2"), newBin, "publishing to")
	c.waitIngest(faultStep)
	for _, p := range c.coords {
		c.upgrade(p, newBin, "serving, Raft at")
		l, err := c.waitLeader(nil, time.Minute)
		c.must(err)
		c.logf("%s leads", l.name)
		c.waitIngest(faultStep)
	}
	for _, p := range c.aggs {
		c.upgrade(p, newBin, "consuming")
		c.waitIngest(faultStep)
	}
	c.must(c.nats.stop(time.Minute))
	c.nats.bin = newBin
	c.startNATS()
	c.logf("upgraded the NATS server on its directory and port")
	c.waitIngest(faultStep)
	c.upgrade(node("alpha1"), newBin, "publishing to")
	c.bin = newBin // the tools of verify's checks
	if _, err := c.cutEpoch(); err != nil {
		t.Fatal(err)
	}

	c.stopNodes()
	c.verify(nil)
	for _, p := range c.all {
		if p.bin != newBin {
			t.Errorf("%s still runs %s", p.name, p.bin)
		}
	}
}

// upgrade stops p gracefully and starts it again from bin, with the same
// command line, waiting until its log says ready.
func (c *failureCluster) upgrade(p *proc, bin, ready string) {
	c.t.Helper()
	c.must(p.stop(time.Minute))
	p.bin = bin
	c.must(p.start())
	c.must(p.waitLog(ready, time.Minute))
	c.logf("upgraded %s", p.name)
}

// buildRelease builds dcpi as of rev (a commit or tag of this repository)
// into dir/dcpi-<rev>, from its files as git archive gives them.
func buildRelease(rev, dir string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", errors.New("no git")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("not in a git checkout: %w", err)
	}
	// From the top: in a subdirectory, git archive takes only that one.
	git := exec.Command("git", "archive", "--format=tar", rev)
	git.Dir = strings.TrimSpace(string(top))
	archive, err := git.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("git archive %s (a shallow clone lacks it; fetch it or set DCPI_UPGRADE_FROM): %w", rev, err)
	}
	src := filepath.Join(dir, "src-"+shortRev(rev))
	if err := untar(archive, src); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "dcpi-"+shortRev(rev))
	build := exec.Command("go", "build", "-o", bin, "./cmd/dcpi")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, os.RemoveAll(src)
}

func shortRev(rev string) string {
	return strings.NewReplacer("/", "-").Replace(rev[:min(len(rev), 12)])
}

// untar writes a git archive's regular files and directories under dir.
func untar(archive []byte, dir string) error {
	r := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("archive entry %q outside the tree", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			data, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			if err := os.WriteFile(name, data, os.FileMode(h.Mode)&0o777); err != nil {
				return err
			}
		}
	}
}
