package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dcpi/transport/auth/enroll"
)

func newEnrollCommand() *cobra.Command {
	o := enroll.InstallOptions{Dir: "/etc/dcpi", Owner: "dcpi"}
	var offline bool
	cmd := &cobra.Command{
		Use:   "enroll BUNDLE",
		Short: "Install this host's enrollment bundle (dcpi nats-server add-host --url issues it)",
		Long: `Check the bundle (well formed, this host's, not expired, its key accepted by
the cluster unless --offline) and write host.nk, ca.pem and enrollment.yaml
in --dir, each mode 0600 and owned by --owner when that user exists; the
node reads them through "enrollment:" in its configuration. A bundle that
fails a check writes nothing (docs/deploy.md).`,
		Example: `  dcpi enroll alpha7.dcpi-bundle
  dcpi enroll alpha7.dcpi-bundle --host alpha7 --offline --dir /tmp/etc-dcpi`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			if o.Host == "" {
				h, _ := os.Hostname()
				o.Host, _, _ = strings.Cut(h, ".")
			}
			if o.Now = time.Now(); !offline {
				o.Probe = enroll.Probe(5 * time.Second)
			}
			in, err := enroll.Install(cmd.Context(), data, o)
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "host %s: key %s installed: %s\n", in.Bundle.Host, in.Bundle.Key, strings.Join(in.Files, " "))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", o.Dir, "where to write the host's files")
	f.StringVar(&o.Host, "host", "", "this host's name (default: the machine's host name up to its first dot)")
	f.StringVar(&o.Owner, "owner", o.Owner, "the user the files belong to, when it exists")
	f.BoolVar(&offline, "offline", false, "do not check the key with the cluster first")
	return cmd
}
