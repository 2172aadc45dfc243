package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dcpi/analysis/symbolize"
	"dcpi/profiledb"
	"dcpi/storage"
	"dcpi/transport/auth"
)

// queryFlags are the options every analysis tool shares:
// where the profile comes from (--db or --nats) and which samples it
// selects (--epoch, --epochs, --since, --from, --to, --host, --select,
// --label, --event, --image, --pid), and --json.
type queryFlags struct {
	filters      profiledb.Filters
	dbDir        string
	json         bool
	nats         []string
	linearizable bool
}

// register adds the shared flags to f. eventUsage describes --event for
// the tool.
func (qf *queryFlags) register(f *pflag.FlagSet, eventUsage string) {
	f.StringVar(&qf.dbDir, "db", "dcpi-db", "directory of a local profile database (opened read-only)")
	qf.filters.Register(f, eventUsage)
	f.BoolVar(&qf.json, "json", false, "print JSON for machines")
	f.StringSliceVar(&qf.nats, "nats", nil, "query the cluster through this NATS server instead of a local --db")
	f.BoolVar(&qf.linearizable, "linearizable", false, "read from the Raft leader after it has applied every commit (cluster only)")
}

// selection turns the flags into a selection, with a clear error for each
// bad one. Labels are applied later, by open (they need the node registry).
func (qf *queryFlags) selection() (profiledb.Selection, error) { return qf.filters.Selection() }

// openedSource is a profile database opened for a tool, with a symbol
// cache over it.
type openedSource struct {
	profiledb.DB
	src   *symbolize.Symbolizer
	close func()
}

func opened(db profiledb.DB, close func()) *openedSource {
	return &openedSource{DB: db, src: symbolize.New(db), close: func() { db.Close(); close() }}
}

// open opens the database (--nats, else --db), applies the labels, the
// time range and the processes to sel (saying on stderr what it covered);
// the caller closes.
func (qf *queryFlags) open(cmd *cobra.Command, name string, sel *profiledb.Selection) (*openedSource, error) {
	db, closeConn, err := openDB(cmd, name, qf.nats, qf.linearizable, qf.dbDir)
	if err != nil {
		return nil, err
	}
	o := opened(db, closeConn)
	if err := profiledb.Select(cmd.Context(), db, sel, cmd.ErrOrStderr()); err != nil {
		o.close()
		return nil, err
	}
	return o, nil
}

// openDB opens the cluster through natsURLs, else the local database at
// dir. closeConn closes the cluster's connection (the database's Close
// does not).
func openDB(cmd *cobra.Command, name string, natsURLs []string, linearizable bool, dir string) (db profiledb.DB, closeConn func(), err error) {
	if len(natsURLs) == 0 {
		if err := refuseConfig(cmd, cmd.CommandPath()+" --db"); err != nil {
			return nil, nil, err
		}
		sdb, err := profiledb.OpenDir(dir)
		if err != nil {
			return nil, nil, err
		}
		return profiledb.NewLocal(sdb), func() {}, nil
	}
	nc, err := connectTool(cmd, natsURLs, auth.Query, name)
	if err != nil {
		return nil, nil, err
	}
	return profiledb.NewCluster(nc, linearizable), nc.Close, nil
}

// selectionHint says why sel matched nothing (profiledb.SelectionHint).
func (o *openedSource) selectionHint(ctx context.Context, sel profiledb.Selection) string {
	return profiledb.SelectionHint(ctx, o.DB, o.src, sel)
}

// emptyHint says which of f's hosts and epochs the database lacks
// (profiledb.EmptyHint).
func (o *openedSource) emptyHint(ctx context.Context, f storage.Query) string {
	return profiledb.EmptyHint(ctx, o.DB, f)
}
