package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"dcpi/analysis/cct"
	"dcpi/analysis/fleetpaths"
	"dcpi/analysis/instrument"
	"dcpi/analysis/oracle"
	"dcpi/analysis/paths"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
)

// A ppReader reads one file format of path profiles into the images to
// upload. ok is false when data is not of its format (the next reader is
// tried). Adding a producer's format (an instrumented run's paths and
// trees) is one more entry in ppReaders.
type ppReader struct {
	name string
	read func(data []byte) (ims []fleetpaths.Image, ok bool, err error)
}

var ppReaders = []ppReader{
	{name: "dcpi pp oracle --save", read: readOracleSaveForUpload},
	{name: "dcpi pp counts --save", read: readInstrumentedForUpload},
	{name: "dcpi pp counts --save (cct)", read: readInstrumentedCCTForUpload},
}

// readInstrumentedCCTForUpload reads the tree dcpi pp counts --save wrote
// from a CCT-mode dump: an instrumented run's calling contexts, uploaded
// as instrumented data with no path counts.
func readInstrumentedCCTForUpload(data []byte) ([]fleetpaths.Image, bool, error) {
	if !instrument.IsSavedCCT(data) {
		return nil, false, nil
	}
	id, t, err := instrument.ReadSavedCCT(data)
	if err != nil {
		return nil, true, err
	}
	empty := &paths.Profile{Source: instrument.ProfileSource, Metrics: []string{}, Images: []paths.ImageProfile{}}
	ims, err := fleetpaths.Split(wire.SourceInstrumented, empty, map[string]*cct.Tree{id: t})
	return ims, true, err
}

// readInstrumentedForUpload reads the path profile dcpi pp counts --save
// wrote from a paths-mode dump: an instrumented run's counts, uploaded as
// instrumented data (no calling context tree: paths mode records none).
func readInstrumentedForUpload(data []byte) ([]fleetpaths.Image, bool, error) {
	p, err := paths.DecodeProfile(data)
	if err != nil || p.Source != instrument.ProfileSource {
		return nil, false, nil
	}
	ims, err := fleetpaths.Split(wire.SourceInstrumented, p, nil)
	return ims, true, err
}

// readOracleSaveForUpload reads a dcpi pp oracle --save file: hwsim
// ground truth, uploaded as oracle data.
func readOracleSaveForUpload(data []byte) ([]fleetpaths.Image, bool, error) {
	var head struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(data, &head) != nil || head.Format != "dcpi-pp-oracle" {
		return nil, false, nil
	}
	s, err := oracle.ReadSaved(data)
	if err != nil {
		return nil, true, err
	}
	trees := map[string]*cct.Tree{}
	for _, t := range s.Trees {
		if trees[t.ID] != nil {
			return nil, true, fmt.Errorf("two trees of image %s (%s): upload the images apart", t.ID, t.Path)
		}
		trees[t.ID] = t.Tree
	}
	ims, err := fleetpaths.Split(wire.SourceOracle, s.Paths, trees)
	return ims, true, err
}

// readPPFile reads FILE with the first reader that knows its format.
func readPPFile(name string) ([]fleetpaths.Image, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var known []string
	for _, r := range ppReaders {
		ims, ok, err := r.read(data)
		if !ok {
			known = append(known, r.name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", name, r.name, err)
		}
		return ims, nil
	}
	return nil, fmt.Errorf("%s: not a path profile file this build reads (%s)", name, strings.Join(known, ", "))
}

// uploadIDs are the upload IDs of a file's images, kept beside it in
// FILE.upload-ids ("<image key> <id>" a line) so that uploading it again,
// after a failure or not, sends the same IDs and the fleet counts it once.
type uploadIDs struct {
	path string
	ids  map[wire.ImageKey]wire.UploadID
}

func loadUploadIDs(file string) (*uploadIDs, error) {
	u := &uploadIDs{path: file + ".upload-ids", ids: map[wire.ImageKey]wire.UploadID{}}
	f, err := os.Open(u.path)
	if errors.Is(err, os.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		k, id, ok := strings.Cut(sc.Text(), " ")
		key, err1 := wire.ParseImageKey(k)
		uid, err2 := wire.ParseUploadID(id)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: want \"<image key> <upload ID>\" (delete the file to upload the profile as a new run)", u.path, n)
		}
		u.ids[key] = uid
	}
	return u, sc.Err()
}

// get returns the image's ID, choosing a new random one if it has none.
func (u *uploadIDs) get(key wire.ImageKey) (wire.UploadID, bool, error) {
	if id, ok := u.ids[key]; ok {
		return id, false, nil
	}
	var id wire.UploadID
	for id.IsZero() {
		if _, err := rand.Read(id[:]); err != nil {
			return id, false, err
		}
	}
	u.ids[key] = id
	return id, true, nil
}

// save writes the IDs (through a temporary file, so a crash leaves the old
// or the new list).
func (u *uploadIDs) save() error {
	keys := make([]wire.ImageKey, 0, len(u.ids))
	for k := range u.ids {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, wire.ImageKey.Compare)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", k, u.ids[k])
	}
	tmp := u.path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, u.path)
}

func newPPUploadCommand() *cobra.Command {
	var (
		natsURLs []string
		dbDir    string
		host     string
	)
	cmd := &cobra.Command{
		Use:   "upload (--nats URL | --db DIR) --host H FILE...",
		Short: "Upload path profiles and calling context trees to the fleet's merged profile",
		Long: `upload sends each image's path counts and calling context tree in FILE
to the fleet, as host H: one upload per image (wire.PathUpload), published
on the host's subject of the path upload stream and applied by the
coordinator (through the aggregators' consumer), which sums path counts
per (source, image, procedure, path) fleet-wide and per host and merges
the trees. FILE is a "dcpi pp oracle --save" file (the simulator's ground
truth: uploaded and kept as oracle data, never merged with instrumented
profiles).

Each upload carries an ID chosen at random the first time FILE is
uploaded and kept in FILE.upload-ids: uploading FILE again, after a
failure or by mistake, sends the same IDs and changes nothing. Delete
FILE.upload-ids to upload the same content as another run.

With --db DIR the uploads are applied to a local profile database
directly (created if needed), by the same rule as the coordinator's.`,
		Example: `  dcpi pp oracle --save tiny.oracle.json -- tiny
  dcpi pp upload --nats nats://127.0.0.1:4222 --host alpha0 tiny.oracle.json
  dcpi pp upload --db /tmp/paths --host alpha0 tiny.oracle.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("need a FILE to upload")
			}
			if (len(natsURLs) > 0) == (dbDir != "") {
				return errors.New("give one of --nats URL and --db DIR")
			}
			if err := wire.CheckHost(host); err != nil {
				return fmt.Errorf("--host: %w", err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			send, done, err := ppUploadTarget(cmd, natsURLs, dbDir)
			if err != nil {
				return err
			}
			defer done()
			for _, file := range args {
				if err := uploadPPFile(cmd.OutOrStdout(), file, host, send); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&natsURLs, "nats", nil, "publish to the cluster through this NATS server")
	cmd.Flags().StringVar(&dbDir, "db", "", "apply to this local profile database instead")
	cmd.Flags().StringVar(&host, "host", "", "the host the profiles were measured on (required)")
	return cmd
}

// ppUploadTarget returns how to send one upload: publish it on the
// stream, or apply it to a local database.
func ppUploadTarget(cmd *cobra.Command, natsURLs []string, dbDir string) (func(*wire.PathUpload) (string, error), func(), error) {
	ctx := cmd.Context()
	if dbDir != "" {
		db, err := storage.Open(dbDir, storage.Options{})
		if err != nil {
			return nil, nil, err
		}
		return func(u *wire.PathUpload) (string, error) {
			out, err := db.ApplyPathUpload(u)
			if err != nil {
				return "", err
			}
			if out.Reason != "" {
				return fmt.Sprintf("%s: %s", out.Status, out.Reason), nil
			}
			return out.Status.String(), nil
		}, func() { db.Close() }, nil
	}
	nc, err := connectTool(natsConfig(cmd, natsURLs), auth.Coordinator, "dcpi-pp-upload")
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := transport.EnsurePathStream(ectx, js, 0); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return func(u *wire.PathUpload) (string, error) {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := transport.PublishPathUpload(pctx, js, u); err != nil {
			return "", err
		}
		return "published (the coordinator applies it once)", nil
	}, nc.Close, nil
}

func uploadPPFile(w io.Writer, file, host string, send func(*wire.PathUpload) (string, error)) error {
	ims, err := readPPFile(file)
	if err != nil {
		return err
	}
	ids, err := loadUploadIDs(file)
	if err != nil {
		return err
	}
	var ups []*wire.PathUpload
	fresh := false
	for i := range ims {
		id, isNew, err := ids.get(ims[i].Key)
		if err != nil {
			return err
		}
		fresh = fresh || isNew
		u, err := ims[i].Upload(host, id)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		ups = append(ups, u)
	}
	// The IDs are kept before anything is sent: a retry resends them.
	if fresh {
		if err := ids.save(); err != nil {
			return fmt.Errorf("%s: keeping the upload IDs: %w", file, err)
		}
	}
	for _, u := range ups {
		st, err := send(u)
		if err != nil {
			return fmt.Errorf("%s: %s: %w (run the upload again: it resends the same IDs)", file, u.Image, err)
		}
		paths, nodes := 0, len(u.Profile.Tree)
		for _, p := range u.Profile.Procs {
			paths += len(p.Paths)
		}
		fmt.Fprintf(w, "%s %s (%s) %s as %s/%s: %d procedures, %d paths, %d contexts: %s\n",
			file, cmp.Or(u.Profile.ImagePath, "?"), u.Image, u.Source, u.Host, u.ID, len(u.Profile.Procs), paths, max(nodes-1, 0), st)
	}
	return nil
}

func newPPFleetCommand() *cobra.Command {
	var (
		natsURLs []string
		dbDir    string
		image    string
		hosts    []string
		labels   map[string]string
		source   string
		top      int
	)
	cmd := &cobra.Command{
		Use:   "fleet (--nats URL | --db DIR) [--image PATH] [--host H]... [--label k=v]... [--source S]",
		Short: "Print the fleet's merged path profiles and calling context trees",
		Long: `fleet prints the path profiles and calling context trees that hosts
uploaded (dcpi pp upload), merged: per image and source, the hot paths
(top N by instructions, or by count when the profile has no instruction
metric), the paths per procedure, and the calling context tree's top
contexts. --host (repeatable) and --label (cluster only: the hosts
registered with those labels) restrict the merge to those hosts' uploads.
--image selects images by path (full or base name) or key.

Oracle data (the simulator's ground truth, from dcpi pp oracle --save) is
stored apart from instrumented profiles and printed under its own label;
--source instrumented or --source oracle prints only one.`,
		Example: `  dcpi pp fleet --nats nats://127.0.0.1:4222
  dcpi pp fleet --db /tmp/paths --image tiny --host alpha0 --top 5`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected argument %q", args[0])
			}
			if len(natsURLs) > 0 && cmd.Flags().Changed("db") {
				return errors.New("give one of --nats URL and --db DIR")
			}
			if len(labels) > 0 && len(natsURLs) == 0 {
				return errNoLabels
			}
			if top < 1 {
				return fmt.Errorf("--top must be at least 1, not %d", top)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			srcs, err := fleetpaths.ParseSources(source)
			if err != nil {
				return err
			}
			r, hostSel, done, err := openPPFleet(cmd, natsURLs, dbDir, hosts, labels)
			if err != nil {
				return err
			}
			defer done()
			return fleetpaths.WriteMerged(cmd.Context(), cmd.OutOrStdout(), r, fleetpaths.Options{Sources: srcs, Image: image, Hosts: hostSel, Top: top})
		},
	}
	cmd.Flags().StringSliceVar(&natsURLs, "nats", nil, "query the cluster through this NATS server instead of a local --db")
	cmd.Flags().StringVar(&dbDir, "db", "dcpi-db", "directory of a local profile database (opened read-only)")
	cmd.Flags().StringVar(&image, "image", "", "only images with this path, base name or key")
	cmd.Flags().StringSliceVar(&hosts, "host", nil, "only these hosts' uploads (repeatable)")
	cmd.Flags().StringToStringVar(&labels, "label", nil, "only hosts registered with label `key=value` (repeatable; cluster only)")
	cmd.Flags().StringVar(&source, "source", "all", "instrumented, oracle or all")
	cmd.Flags().IntVar(&top, "top", 10, "hot paths and contexts to print per image")
	return cmd
}

func openPPFleet(cmd *cobra.Command, natsURLs []string, dbDir string, hosts []string, labels map[string]string) (fleetpaths.Reader, []string, func(), error) {
	q := storage.Query{Hosts: hosts}
	if len(natsURLs) > 0 {
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
		defer cancel()
		nc, err := connectTool(natsConfig(cmd, natsURLs), auth.Query, "dcpi-pp-fleet")
		if err != nil {
			return nil, nil, nil, err
		}
		c := coordinator.NewClient(nc)
		if err := selectLabels(ctx, c, labels, &q); err != nil {
			nc.Close()
			return nil, nil, nil, err
		}
		return coordinator.NewReader(c, false), q.Hosts, nc.Close, nil
	}
	db, err := openLocalDB(dbDir)
	if err != nil {
		return nil, nil, nil, err
	}
	return fleetpaths.Local{DB: db}, q.Hosts, func() { db.Close() }, nil
}
