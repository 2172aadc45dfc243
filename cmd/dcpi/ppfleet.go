package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/analysis/fleetpaths"
	"dcpi/analysis/pathupload"
	"dcpi/cluster"
	"dcpi/profiledb"
	"dcpi/transport/auth"
	"dcpi/wire"
)

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
			return pathupload.UploadFiles(cmd.Context(), cmd.OutOrStdout(), pathupload.Options{Files: args, Host: host, Send: send})
		},
	}
	cmd.Flags().StringSliceVar(&natsURLs, "nats", nil, "publish to the cluster through this NATS server")
	cmd.Flags().StringVar(&dbDir, "db", "", "apply to this local profile database instead")
	cmd.Flags().StringVar(&host, "host", "", "the host the profiles were measured on (required)")
	return cmd
}

// ppUploadTarget returns how to send one upload: publish it on the
// stream, or apply it to a local database.
func ppUploadTarget(cmd *cobra.Command, natsURLs []string, dbDir string) (pathupload.Sender, func(), error) {
	if dbDir != "" {
		return pathupload.OpenLocal(dbDir)
	}
	nc, err := connectTool(cmd, natsURLs, auth.Coordinator, "dcpi-pp-upload")
	if err != nil {
		return nil, nil, err
	}
	send, err := cluster.PathUploadPublisher(cmd.Context(), nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return send, nc.Close, nil
}

func newPPFleetCommand() *cobra.Command {
	var (
		natsURLs []string
		dbDir    string
		image    string
		hosts    []string
		sels     []string
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
contexts. --host (repeatable), --select and --label (the hosts whose
labels match, as in dcpi prof) restrict the merge to those hosts' uploads.
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
			sel, err := profiledb.Filters{Hosts: hosts, Select: sels, Labels: labels}.Selection()
			if err != nil {
				return err
			}
			db, closeConn, err := openDB(cmd, "dcpi-pp-fleet", natsURLs, false, dbDir)
			if err != nil {
				return err
			}
			defer closeConn()
			defer db.Close()
			if err := profiledb.SelectPathHosts(cmd.Context(), db, &sel); err != nil {
				return err
			}
			return fleetpaths.WriteMerged(cmd.Context(), cmd.OutOrStdout(), db, fleetpaths.Options{Sources: srcs, Image: image, Hosts: sel.Filter.Hosts, Top: top})
		},
	}
	cmd.Flags().StringSliceVar(&natsURLs, "nats", nil, "query the cluster through this NATS server instead of a local --db")
	cmd.Flags().StringVar(&dbDir, "db", "dcpi-db", "directory of a local profile database (opened read-only)")
	cmd.Flags().StringVar(&image, "image", "", "only images with this path, base name or key")
	cmd.Flags().StringSliceVar(&hosts, "host", nil, "only these hosts' uploads (repeatable)")
	cmd.Flags().StringArrayVar(&sels, "select", nil, "only hosts whose labels match `SELECTOR` (as dcpi prof's; repeatable)")
	cmd.Flags().StringToStringVar(&labels, "label", nil, "only hosts registered with label `key=value` (repeatable)")
	cmd.Flags().StringVar(&source, "source", "all", "instrumented, oracle or all")
	cmd.Flags().IntVar(&top, "top", 10, "hot paths and contexts to print per image")
	return cmd
}
