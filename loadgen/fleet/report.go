package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"dcpi/loadgen"
)

func WriteResult(w io.Writer, r Result, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	verdict := "not sustained"
	if r.Sustained {
		verdict = "sustained"
	}
	fmt.Fprintf(w, "%d hosts, %.1f s: generated %.0f samples/s, stored %.0f/s (second half %.0f of %.0f/s); %d batches; delay to queryable p50 %.0f s, max %.0f s; drained %.1f s after the load; %s\n",
		r.Hosts, r.Seconds, r.GeneratedRate, r.StoredRate, r.LateStoredRate, r.LateGenRate, r.Batches, r.DelayP50, r.DelayMax, r.DrainSeconds, verdict)
	if r.Conserved {
		fmt.Fprintf(w, "  conservation holds exactly: %d generated = %d stored + unknown + dropped (%d dropped)\n", r.Generated, r.Stored, r.Drops)
	} else {
		fmt.Fprintf(w, "  conservation FAILS: %d generated, the cluster holds %d (%+d)\n", r.Generated, r.Stored, int64(r.Stored)-int64(r.Generated))
	}
	if r.HostKeys {
		fmt.Fprintf(w, "  agents: a connection and key per host; %d heartbeats answered, %d not; applied polls failed %d, batches sent again %d; %d moves to a later epoch, %d acknowledgements (%d failed, sent again)\n",
			r.Heartbeats, r.HeartbeatFails, r.AppliedErrors, r.Republished, r.AgentCuts, r.Acks, r.AckFailures)
	} else {
		fmt.Fprintf(w, "  agents: shared connections on the coordinator's key, no heartbeats; applied polls failed %d, batches sent again %d\n", r.AppliedErrors, r.Republished)
	}
	if r.Cuts+r.CutFailures > 0 {
		fmt.Fprintf(w, "  epochs: %d cut (%d cuts failed), %d sealed; from cut to sealed p50 %.0f s, max %.0f s\n", r.Cuts, r.CutFailures, r.Sealed, r.SealP50, r.SealMax)
	}
	for _, u := range r.Roles {
		fmt.Fprintf(w, "  %-12s %.2f cores, peak RSS %d MiB\n", u.Role, u.Cores, u.PeakRSS>>20)
	}
	return nil
}

// Run is dcpi loadgen run: it reads o.Recording, describes it on w, and
// replays it once as o.Hosts agents or, with o.FindKnee, sweeps host
// counts, writing each run's result to w. Without o.Dir the started
// clusters live in a temporary directory, removed afterwards.
func Run(ctx context.Context, w io.Writer, o Options) error {
	if o.Recording == "" {
		return errors.New("--recording: name a file dcpi loadgen record wrote")
	}
	data, err := os.ReadFile(o.Recording)
	if err != nil {
		return err
	}
	rec, err := loadgen.Decode(data)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Recording, err)
	}
	if err := o.Check(); err != nil {
		return err
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "dcpi-loadgen-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.Dir = d
	}
	WriteRecordingLine(w, o.Recording, rec)
	if o.FindKnee {
		return FindKnee(ctx, w, rec, o)
	}
	r, err := RunStep(ctx, rec, o, o.Hosts, o.Dir)
	if err != nil {
		return err
	}
	return WriteResult(w, r, o.JSON)
}

// FindKnee sweeps host counts: doubling from o.Hosts until a run is not
// sustained, then bisecting the gap three times.
func FindKnee(ctx context.Context, w io.Writer, rec *loadgen.Recording, o Options) error {
	step := 0
	try := func(n int) (bool, error) {
		step++
		r, err := RunStep(ctx, rec, o, n, filepath.Join(o.Dir, fmt.Sprintf("run%d-%dhosts", step, n)))
		if err != nil {
			return false, err
		}
		return r.Sustained, WriteResult(w, r, o.JSON)
	}
	good, bad := 0, 0
	for n := o.Hosts; n <= o.MaxHosts; n *= 2 {
		ok, err := try(n)
		if err != nil {
			return err
		}
		if !ok {
			bad = n
			break
		}
		good = n
	}
	if bad == 0 {
		fmt.Fprintf(w, "knee: above --max-hosts %d (%d sustained)\n", o.MaxHosts, good)
		return nil
	}
	for range 3 {
		if bad-good <= 1 {
			break
		}
		n := (good + bad) / 2
		ok, err := try(n)
		if err != nil {
			return err
		}
		if ok {
			good = n
		} else {
			bad = n
		}
	}
	if good == 0 {
		fmt.Fprintf(w, "knee: below %d hosts (none sustained)\n", o.Hosts)
		return nil
	}
	fmt.Fprintf(w, "knee: %d hosts sustained, %d not\n", good, bad)
	return nil
}
