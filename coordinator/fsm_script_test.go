package coordinator

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/hashicorp/raft"

	"dcpi/storage"
	"dcpi/wire"
)

// TestFSMEpochLifecycle runs the scripts testdata/fsm_* against a state
// machine on a real database: each command is encoded, given the next log
// index and applied as Raft would, and its result printed; `status` prints
// the replicated state. A refused command must change nothing, which the
// harness checks after every refusal. Regenerate the expectations with
// -rewrite, then read the diff: the scripts are the specification.
//
// Commands (times are offsets from t0, e.g. at=90s; lists are comma
// separated, e.g. last=3,0):
//
//	start at=T
//	register host=H cpus=N [labels=k:v,...] [periods=event:n,...] at=T
//	cut at=T
//	scheduled-cut epoch=E at=T
//	ack host=H epoch=E [last=S,...] at=T
//	seal epoch=E at=T
//	merge first=E last=E     (MergeEpochs)
//	expire through=E         (ExpireEpochs)
//	batch host=H [cpu=C|all] seq=S [last=S] epoch=E [samples=N] [unknown=N] [drops=N]
//	paths host=H id=N [source=oracle] [metrics=m,...] [numpaths=N] [paths=ID:COUNT,...] [calls=PROC:N,...]
//	                         (a path upload of procedure 0x100 of the script image;
//	                          each path's metrics are 10×COUNT; calls are the root's children)
//	raw hex=BYTES            (an entry as it came off the log, unchecked)
//	entries                  (input: one command a line, applied together by ApplyBatch)
//	due [dead=H,...]         (the sealing rule with those hosts dead)
//	schedule every=D at=T    (the scheduling rule at T for a period of D)
//	retain [full=D] [merge_to=D] [keep=D] [every=D] at=T
//	                         (the retention rule at T for that policy, checked
//	                          first by CheckRetention with epoch_every D)
//	restart                  (close and reopen the database)
//	snapshot-restore         (snapshot, restore into a new replica, go on there)
//	status
func TestFSMEpochLifecycle(t *testing.T) {
	scripts, err := filepath.Glob("testdata/fsm_*")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range scripts {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s := &fsmScript{t: t, dir: t.TempDir()}
			s.open(filepath.Join(s.dir, "fsm"))
			defer func() { s.f.Close() }()
			datadriven.RunTest(t, path, s.run)
		})
	}
}

type fsmScript struct {
	t     *testing.T
	dir   string
	f     *FSM
	fdir  string
	index uint64 // the last log index given out
	dirs  int
}

func (s *fsmScript) open(dir string) {
	s.t.Helper()
	f, err := OpenFSM(dir, s.t.Logf)
	if err != nil {
		s.t.Fatal(err)
	}
	s.f, s.fdir = f, dir
}

func (s *fsmScript) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "status":
		return s.status()
	case "due":
		return s.due(td.CmdArgs)
	case "schedule":
		return s.schedule(td.CmdArgs)
	case "retain":
		return s.retain(td.CmdArgs)
	case "restart":
		if err := s.f.Close(); err != nil {
			t.Fatal(err)
		}
		s.open(s.fdir)
		return fmt.Sprintf("applied index %d\n", s.f.AppliedIndex())
	case "snapshot-restore":
		return s.snapshotRestore()
	case "entries":
		return s.entries(td.Pos, td.Input)
	}
	if td.Input != "" {
		t.Fatalf("%s: %s takes no input", td.Pos, td.Cmd)
	}
	data, err := encodeScriptCommand(scriptArgs{t, td.Pos, td.CmdArgs}, td.Cmd)
	if err != nil {
		// Check refused it: it never reaches the log.
		return fmt.Sprintf("refused before the log: %v\n", err)
	}
	before, beforeIndex := s.status(), s.f.AppliedIndex()
	s.index++
	out := formatResult(s.f.ApplyCommand(s.index, data))
	if strings.HasPrefix(out, "refused") || strings.HasPrefix(out, "error") {
		if after := s.status(); after != before || s.f.AppliedIndex() != beforeIndex {
			t.Errorf("%s: a refused command changed the state:\n%s\nwas\n%s", td.Pos, after, before)
		}
	}
	return out
}

// entries applies one command a line as consecutive log entries through
// ApplyBatch, Raft's path for entries committed together.
func (s *fsmScript) entries(pos, input string) string {
	var logs []*raft.Log
	var lines []string
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		cmd, args, err := datadriven.ParseLine(line)
		if err != nil {
			s.t.Fatalf("%s: %v", pos, err)
		}
		data, err := encodeScriptCommand(scriptArgs{s.t, pos + ": " + line, args}, cmd)
		if err != nil {
			fmt.Fprintf(&b, "%s: refused before the log: %v\n", line, err)
			continue
		}
		s.index++
		logs = append(logs, &raft.Log{Index: s.index, Type: raft.LogCommand, Data: data})
		lines = append(lines, line)
	}
	for i, res := range s.f.ApplyBatch(logs) {
		fmt.Fprintf(&b, "%s: %s", lines[i], formatResult(res))
	}
	return b.String()
}

func formatResult(res any) string {
	switch r := res.(type) {
	case nil:
		return "ok\n"
	case error:
		if errors.Is(r, ErrBadCommand) {
			return fmt.Sprintf("refused: %v\n", r)
		}
		return fmt.Sprintf("error: %v\n", r)
	case uint64:
		return fmt.Sprintf("epoch %d\n", r)
	case ScheduledCutResult:
		if r.Opened == 0 {
			return "superseded: nothing changed\n"
		}
		return fmt.Sprintf("epoch %d\n", r.Opened)
	case MergeResult:
		if r.Parts == 0 {
			return "superseded: nothing changed\n"
		}
		return fmt.Sprintf("merged %d epochs into epoch %d (%d..%d)\n", r.Parts, r.Epoch.Number, r.Epoch.Number, r.Epoch.MergedThrough)
	case ExpireResult:
		if r.Epochs == 0 {
			return "superseded: nothing changed\n"
		}
		return fmt.Sprintf("expired %d epochs: %d samples, %d stack samples, %d ProfileMe samples\n",
			r.Epochs, r.Expired.Samples, r.Expired.StackSamples, r.Expired.MeSamples)
	case AckResult:
		if r.Late {
			return "late\n"
		}
		return "on time\n"
	case storage.PathOutcome:
		// Not "refused: ...": a refused upload is recorded (a state
		// change), unlike a refused command.
		if r.Reason != "" {
			return fmt.Sprintf("upload %s: %s\n", r.Status, r.Reason)
		}
		return "upload " + r.Status.String() + "\n"
	case []storage.Outcome:
		var ss []string
		for _, o := range r {
			ss = append(ss, strings.ToLower(o.String()))
		}
		return strings.Join(ss, " ") + "\n"
	}
	return fmt.Sprintf("%T %v\n", res, res)
}

// scriptImage is the image every scripted batch samples.
var scriptImage = func() wire.ImageKey {
	k, err := wire.NewImageKey(wire.KindBuildID, []byte("fsm-script"))
	if err != nil {
		panic(err)
	}
	return k
}()

// encodeScriptCommand builds a command from a script line and encodes it
// as a proposer would (EncodeCommand checks it first).
func encodeScriptCommand(a scriptArgs, cmd string) ([]byte, error) {
	var c Command
	switch cmd {
	case "raw":
		return hex.DecodeString(a.str("hex"))
	case "start":
		c = &StartEpochs{At: a.at()}
	case "register":
		r := &RegisterNode{Host: a.str("host"), CPUs: int(a.uint("cpus", 0)), At: a.at()}
		for _, kv := range a.list("labels") {
			k, v, _ := strings.Cut(kv, ":")
			if r.Labels == nil {
				r.Labels = map[string]string{}
			}
			r.Labels[k] = v
		}
		for _, ep := range a.list("periods") {
			e, n, _ := strings.Cut(ep, ":")
			if r.Periods == nil {
				r.Periods = map[uint8]uint64{}
			}
			r.Periods[uint8(a.parseUint(e))] = a.parseUint(n)
		}
		c = r
	case "cut":
		c = &CutEpoch{At: a.at()}
	case "scheduled-cut":
		c = &ScheduledCut{Epoch: a.uint("epoch", 0), At: a.at()}
	case "ack":
		ack := &AckEpoch{Host: a.str("host"), Epoch: a.uint("epoch", 0), At: a.at()}
		for _, v := range a.list("last") {
			ack.LastSeq = append(ack.LastSeq, a.parseUint(v))
		}
		c = ack
	case "seal":
		c = &SealEpoch{Epoch: a.uint("epoch", 0), At: a.at()}
	case "merge":
		c = &MergeEpochs{First: a.uint("first", 0), Last: a.uint("last", 0)}
	case "expire":
		c = &ExpireEpochs{Through: a.uint("through", 0)}
	case "batch":
		b := &wire.Batch{Version: wire.Version, Host: a.str("host"), Seq: a.uint("seq", 0), Epoch: a.uint("epoch", 0)}
		if a.str("cpu") == "all" {
			b.CPU = wire.AllCPUs
		} else {
			b.CPU = uint16(a.uint("cpu", 0))
		}
		if n := a.uint("samples", 0); n > 0 {
			b.Entries = []wire.Entry{{Image: scriptImage, Offset: 0x40, Count: n}}
		}
		if n := a.uint("unknown", 0); n > 0 {
			b.Unknown = []wire.UnknownEntry{{PID: 7, PC: 0x1200, Count: n}}
		}
		if n := a.uint("drops", 0); n > 0 {
			b.Drops = map[string]uint64{wire.DropOverflowFull: n}
		}
		b.Normalize()
		c = &Ingest{Deltas: []storage.Delta{{Batch: b, Last: a.uint("last", 0)}}}
	case "paths":
		c = &UploadPaths{Upload: a.pathUpload()}
	default:
		a.t.Fatalf("%s: unknown command %q", a.pos, cmd)
	}
	return EncodeCommand(c)
}

// pathUpload builds the upload of a paths line.
func (a scriptArgs) pathUpload() *wire.PathUpload {
	u := &wire.PathUpload{Host: a.str("host"), Image: scriptImage, Source: wire.SourceInstrumented}
	u.ID[15] = byte(a.uint("id", 0))
	if a.str("source") == "oracle" {
		u.Source = wire.SourceOracle
	}
	p := &u.Profile
	p.ImagePath, p.PathMetrics = "/bin/script", a.list("metrics")
	if p.PathMetrics == nil {
		p.PathMetrics = []string{"cycles"}
	}
	proc := wire.PathProc{Entry: 0x100, Name: "main", NumPaths: a.uint("numpaths", 4)}
	for _, v := range a.list("paths") {
		id, n, _ := strings.Cut(v, ":")
		r := wire.PathRun{ID: a.parseUint(id), Count: a.parseUint(n)}
		for range p.PathMetrics {
			r.Metrics = append(r.Metrics, 10*r.Count)
		}
		proc.Paths = append(proc.Paths, r)
	}
	p.Procs = []wire.PathProc{proc}
	if calls := a.list("calls"); calls != nil {
		p.TreeMetrics = []string{"calls"}
		p.Tree = []wire.TreeNode{{Metrics: []uint64{0}}}
		for _, v := range calls {
			pr, n, _ := strings.Cut(v, ":")
			p.Tree = append(p.Tree, wire.TreeNode{Proc: a.parseUint(pr), Metrics: []uint64{a.parseUint(n)}})
		}
	}
	return u
}

// pathStatus renders the merged path profiles and the upload records.
func pathStatus(b *strings.Builder, db *storage.DB) error {
	ims, err := db.PathImages(0)
	if err != nil {
		return err
	}
	for _, im := range ims {
		p, err := db.PathProfile(im.Source, im.Image, nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "paths %s %s hosts=%s metrics=%s\n", im.Source, im.ImagePath, strings.Join(im.Hosts, ","), strings.Join(p.PathMetrics, ","))
		for _, pr := range p.Procs {
			fmt.Fprintf(b, "  proc %#x paths=%d:", pr.Entry, pr.NumPaths)
			for _, r := range pr.Paths {
				fmt.Fprintf(b, " %d×%d%v", r.ID, r.Count, r.Metrics)
			}
			b.WriteString("\n")
		}
		for _, n := range p.Tree[min(1, len(p.Tree)):] {
			fmt.Fprintf(b, "  context %d %v\n", n.Proc, n.Metrics)
		}
	}
	ups, err := db.PathUploads()
	if err != nil {
		return err
	}
	for _, u := range ups {
		st := "applied"
		if u.Refused != "" {
			st = "refused: " + u.Refused
		}
		fmt.Fprintf(b, "upload %s/%d %s %s\n", u.Host, u.ID[15], u.Source, st)
	}
	return nil
}

// scriptArgs reads a script line's arguments; a malformed one is the
// script's mistake and fails the test.
type scriptArgs struct {
	t    testing.TB
	pos  string
	args []datadriven.CmdArg
}

func (a scriptArgs) str(key string) string {
	for _, arg := range a.args {
		if arg.Key == key {
			return strings.Join(arg.Vals, ",")
		}
	}
	return ""
}

func (a scriptArgs) list(key string) []string {
	if s := a.str(key); s != "" {
		return strings.Split(s, ",")
	}
	return nil
}

func (a scriptArgs) uint(key string, def uint64) uint64 {
	if s := a.str(key); s != "" {
		return a.parseUint(s)
	}
	return def
}

// at is the at= argument as a time: an offset from t0 (absent: no time,
// which Check refuses).
func (a scriptArgs) at() time.Time {
	s := a.str("at")
	if s == "" {
		return time.Time{}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		a.t.Fatalf("%s: at=%s: %v", a.pos, s, err)
	}
	return t0.Add(d)
}

func (a scriptArgs) parseUint(s string) uint64 {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		a.t.Fatalf("%s: %q: %v", a.pos, s, err)
	}
	return n
}

// since renders a time as its offset from t0 ("-" for none).
func since(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Sub(t0).String()
}

func seqs(s []uint64) string {
	var out []string
	for _, n := range s {
		out = append(out, strconv.FormatUint(n, 10))
	}
	return strings.Join(out, ",")
}

// status renders the replicated state: the applied index, epochs with
// their acks, nodes, streams, and what each epoch holds per host.
func (s *fsmScript) status() string {
	t := s.t
	var b strings.Builder
	err := s.f.View(func(db *storage.DB) error {
		fmt.Fprintf(&b, "applied index %d\n", s.f.AppliedIndex())
		eps, err := db.Epochs()
		if err != nil {
			return err
		}
		hosts, err := db.Hosts()
		if err != nil {
			return err
		}
		for _, e := range eps {
			merged := ""
			if e.MergedThrough != 0 {
				merged = fmt.Sprintf(" (merged %d..%d)", e.Number, e.MergedThrough)
			}
			fmt.Fprintf(&b, "epoch %d %v from %s to %s%s\n", e.Number, e.State, since(e.Start), since(e.End), merged)
			acks, err := db.EpochAcks(e.Number)
			if err != nil {
				return err
			}
			for _, a := range acks {
				late := ""
				if a.Late {
					late = " late"
				}
				fmt.Fprintf(&b, "  ack %s last=%s at %s%s\n", a.Host, seqs(a.LastSeq), since(a.At), late)
			}
			for _, h := range hosts {
				n, unknown, drops, err := db.Totals(storage.Query{Epochs: []uint64{e.Number}, Hosts: []string{h}})
				if err != nil {
					return err
				}
				if n+unknown == 0 && len(drops) == 0 {
					continue
				}
				fmt.Fprintf(&b, "  host %s: %d samples, %d unknown", h, n, unknown)
				for _, k := range slices.Sorted(maps.Keys(drops)) {
					fmt.Fprintf(&b, ", %s %d", k, drops[k])
				}
				b.WriteString("\n")
			}
		}
		for _, h := range hosts {
			x, err := db.ExpiredTotals(storage.Query{Hosts: []string{h}})
			if err != nil {
				return err
			}
			if x != (storage.Expired{}) {
				fmt.Fprintf(&b, "expired host %s: %d samples\n", h, x.Samples)
			}
		}
		nodes, err := db.Nodes()
		if err != nil {
			return err
		}
		for _, n := range nodes {
			var labels []string
			for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
				labels = append(labels, k+":"+n.Labels[k])
			}
			var periods string
			for _, e := range slices.Sorted(maps.Keys(n.Periods)) {
				periods += fmt.Sprintf(",%d:%d", e, n.Periods[e])
			}
			if periods != "" {
				periods = " periods=" + periods[1:]
			}
			fmt.Fprintf(&b, "node %s cpus=%d labels=%s%s registered %s updated %s\n",
				n.Host, n.CPUs, strings.Join(labels, ","), periods, since(n.Registered), since(n.Updated))
		}
		for _, h := range hosts {
			for _, cpu := range []uint16{0, 1, 2, 3, wire.AllCPUs} {
				seq, err := db.Applied(h, cpu)
				if err != nil {
					return err
				}
				if seq == 0 {
					continue
				}
				name := strconv.Itoa(int(cpu))
				if cpu == wire.AllCPUs {
					name = "all"
				}
				fmt.Fprintf(&b, "stream %s cpu %s applied through %d\n", h, name, seq)
			}
		}
		return pathStatus(&b, db)
	})
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return b.String()
}

// due evaluates the sealing rule with the dead= hosts not live, and says
// what the closing epochs wait for.
// schedule evaluates the scheduling rule against the replicated epochs
// and says the cut it would propose, or when the open epoch is cut.
func (s *fsmScript) schedule(args []datadriven.CmdArg) string {
	a := scriptArgs{s.t, "schedule", args}
	every, err := time.ParseDuration(a.str("every"))
	if err != nil {
		s.t.Fatalf("schedule: every: %v", err)
	}
	now := a.at()
	c, due, err := s.f.DueScheduledCut(every, now)
	if err != nil {
		s.t.Fatal(err)
	}
	if due {
		return fmt.Sprintf("due: scheduled-cut epoch=%d at=%s\n", c.Epoch, since(c.At))
	}
	var b strings.Builder
	b.WriteString("due: none")
	if err := s.f.View(func(db *storage.DB) error {
		eps, err := db.Epochs()
		if cur, ok := openEpoch(eps); ok {
			fmt.Fprintf(&b, "; epoch %d is cut at %s", cur.Number, since(NextBoundary(cur.Start, every)))
		}
		return err
	}); err != nil {
		s.t.Fatal(err)
	}
	b.WriteString("\n")
	return b.String()
}

// retain evaluates the retention rule against the replicated epochs and
// says the command it would propose; a policy CheckRetention refuses is
// printed as refused.
func (s *fsmScript) retain(args []datadriven.CmdArg) string {
	a := scriptArgs{s.t, "retain", args}
	dur := func(key string) time.Duration {
		if a.str(key) == "" {
			return 0
		}
		d, err := time.ParseDuration(a.str(key))
		if err != nil {
			s.t.Fatalf("retain: %s: %v", key, err)
		}
		return d
	}
	p := Retention{Full: dur("full"), MergeTo: dur("merge_to"), Keep: dur("keep")}
	if err := CheckRetention(p, dur("every")); err != nil {
		return fmt.Sprintf("refused: %v\n", err)
	}
	c, due, err := s.f.DueRetention(p, a.at())
	if err != nil {
		s.t.Fatal(err)
	}
	switch c := c.(type) {
	case *MergeEpochs:
		return fmt.Sprintf("due: merge first=%d last=%d\n", c.First, c.Last)
	case *ExpireEpochs:
		return fmt.Sprintf("due: expire through=%d\n", c.Through)
	}
	if due {
		s.t.Fatalf("retain: due %T", c)
	}
	return "due: none\n"
}

func (s *fsmScript) due(args []datadriven.CmdArg) string {
	dead := scriptArgs{s.t, "due", args}.list("dead")
	live := func(h string) bool { return !slices.Contains(dead, h) }
	due, err := s.f.DueSeals(live)
	if err != nil {
		s.t.Fatal(err)
	}
	var waiting map[uint64][]string
	if err := s.f.View(func(db *storage.DB) (err error) {
		_, waiting, err = sealView(db, live)
		return err
	}); err != nil {
		s.t.Fatal(err)
	}
	var b strings.Builder
	if len(due) == 0 {
		b.WriteString("due: none\n")
	} else {
		fmt.Fprintf(&b, "due: %s\n", seqs(due))
	}
	for _, n := range slices.Sorted(maps.Keys(waiting)) {
		for _, w := range waiting[n] {
			fmt.Fprintf(&b, "epoch %d waits for %s\n", n, w)
		}
	}
	return b.String()
}

// snapshotRestore snapshots the state machine, restores the snapshot into
// a new replica that holds other data, checks that it shows the same
// state, and carries on there.
func (s *fsmScript) snapshotRestore() string {
	t := s.t
	want := s.status()
	snap, err := s.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	s.dirs++
	dir := filepath.Join(s.dir, fmt.Sprintf("restored-%d", s.dirs))
	dst, err := OpenFSM(dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodeCommand(&RegisterNode{Host: "other", CPUs: 1, At: t0})
	if err != nil {
		t.Fatal(err)
	}
	if res, ok := dst.ApplyCommand(1, data).(error); ok {
		t.Fatal(res)
	}
	if err := dst.Restore(readCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	s.f.Close()
	s.f, s.fdir = dst, dir
	if got := s.status(); got != want {
		return fmt.Sprintf("restored state differs:\n%s", got)
	}
	return fmt.Sprintf("restored at applied index %d\n", s.f.AppliedIndex())
}
