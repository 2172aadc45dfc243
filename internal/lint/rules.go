package lint

// Rules is the project's layering: who may import whom. Data flows from
// the simulated hardware through the node agent, transport, aggregators
// and the coordinator into storage, and the analyses read it back; no
// package imports one above it in that flow, and the heavy dependencies
// (Pebble, Raft, cobra) stay with the one package that owns each.
var Rules = []Rule{
	{
		Name:   "only storage imports Pebble",
		From:   []string{"dcpi/..."},
		Except: []string{"dcpi/storage"},
		Forbid: []string{"github.com/cockroachdb/pebble/..."},
		Why:    "the schema and every read and write of the database are storage's",
	},
	{
		Name:   "only the coordinator imports Raft",
		From:   []string{"dcpi/..."},
		Except: []string{"dcpi/coordinator/..."},
		Forbid: []string{"github.com/hashicorp/raft/...", "github.com/hashicorp/raft-wal/..."},
		Why:    "consensus is the coordinator's; others reach it through its client",
	},
	{
		Name:   "only the command imports cobra",
		From:   []string{"dcpi/..."},
		Except: []string{"dcpi/cmd/..."},
		Forbid: []string{"github.com/spf13/cobra/..."},
		Why:    "packages take configs and return results; parsing flags is the command's",
	},
	{
		Name:   "nothing imports the command",
		From:   []string{"dcpi/..."},
		Except: []string{"dcpi/cmd/..."},
		Forbid: []string{"dcpi/cmd/..."},
		Why:    "library logic lives in packages",
	},
	{
		Name:   "the machine imports nothing of the profiler",
		From:   []string{"dcpi/hwsim/..."},
		Forbid: []string{"dcpi/..."},
		Allow:  []string{"dcpi/hwsim/...", "dcpi/workloads"},
		Why:    "hwsim is the hardware and the kernel; profilers attach through its interfaces (microbench runs the embedded workloads)",
	},
	{
		Name:   "the node agent knows nothing of the simulator beyond the ISA",
		From:   []string{"dcpi/node/..."},
		Forbid: []string{"dcpi/hwsim/...", "dcpi/simhost/...", "dcpi/transport/...", "dcpi/aggregator/...", "dcpi/coordinator/...", "dcpi/storage/...", "dcpi/analysis/..."},
		Allow:  []string{"dcpi/hwsim/alpha"},
		Why:    "node runs on any node.Host (a simulated host today, a Linux host next); it publishes through node.Publisher",
	},
	{
		Name:   "wire imports only the shared codecs",
		From:   []string{"dcpi/wire/..."},
		Forbid: []string{"dcpi/..."},
		Allow:  []string{"dcpi/wire/...", "dcpi/internal/bincodec", "dcpi/internal/hotlist"},
		Why:    "every side shares the formats; they depend on no side",
	},
	{
		Name:   "config imports nothing of the project",
		From:   []string{"dcpi/config"},
		Forbid: []string{"dcpi/..."},
		Why:    "every role reads its configuration; the configuration knows no role",
	},
	{
		Name:       "the transport links no consumer and no database",
		From:       []string{"dcpi/transport/..."},
		Forbid:     []string{"dcpi/aggregator/...", "dcpi/coordinator/...", "dcpi/storage/...", "dcpi/node/...", "github.com/cockroachdb/pebble/...", "github.com/hashicorp/raft/..."},
		Transitive: true,
		Why:        "a node agent's publisher and the credentials package link only NATS and wire; shared names live in wire/delivery and wire/coordproto",
	},
	{
		Name:   "storage imports nothing above it",
		From:   []string{"dcpi/storage/..."},
		Forbid: []string{"dcpi/aggregator/...", "dcpi/coordinator/...", "dcpi/transport/...", "dcpi/node/...", "dcpi/simhost/...", "dcpi/analysis/...", "dcpi/hwsim/..."},
		Why:    "the database is the bottom of the data flow",
	},
	{
		Name:   "the aggregator imports nothing above it",
		From:   []string{"dcpi/aggregator/..."},
		Forbid: []string{"dcpi/coordinator/...", "dcpi/transport/...", "dcpi/node/...", "dcpi/simhost/...", "dcpi/analysis/...", "dcpi/hwsim/..."},
		Why:    "it declares Source, ImageStore and Proposer; transport and the coordinator implement them",
	},
	{
		Name:   "the coordinator imports no role that talks to it",
		From:   []string{"dcpi/coordinator/..."},
		Forbid: []string{"dcpi/aggregator/...", "dcpi/transport/...", "dcpi/node/...", "dcpi/simhost/...", "dcpi/analysis/...", "dcpi/hwsim/..."},
		Why:    "it serves requests on wire/coordproto's subjects; its clients import it, not the reverse",
	},
	{
		Name:   "the analyses read profiles, not the roles",
		From:   []string{"dcpi/analysis/..."},
		Forbid: []string{"dcpi/aggregator/...", "dcpi/coordinator/...", "dcpi/transport/...", "dcpi/simhost/...", "dcpi/node/..."},
		Allow:  []string{"dcpi/node/valuemod"},
		Except: []string{"dcpi/analysis/profileme/paperfigs"},
		Why:    "tools read through their Source interfaces (a local database or the coordinator's reader); values reads the records of node/valuemod's modules; profileme/paperfigs reproduces the ProfileMe paper's figures by running the simulated machine with a node on it",
	},
	{
		Name:   "estimators do not run the machine",
		From:   []string{"dcpi/analysis/..."},
		Except: []string{"dcpi/analysis/oracle", "dcpi/analysis/codetest", "dcpi/analysis/profileme/paperfigs", "dcpi/analysis/pptables/reproduce"},
		Forbid: []string{"dcpi/hwsim", "dcpi/hwsim/ev6"},
		Why:    "truth judges, never feeds: only the oracle (ground truth), the paper-figure runs and the test kit run the simulator",
	},
	{
		Name:   "only the image finder reads the embedded binaries",
		From:   []string{"dcpi/analysis/..."},
		Except: []string{"dcpi/analysis/imagefind", "dcpi/analysis/oracle", "dcpi/analysis/codetest", "dcpi/analysis/internal/analysistest", "dcpi/analysis/internal/findertest", "dcpi/analysis/profileme/paperfigs", "dcpi/analysis/pptables/reproduce"},
		Forbid: []string{"dcpi/workloads", "dcpi/hwsim/vmunix"},
		Why:    "a tool reads an image's bytes through imagefind (embedded workloads and vmunix first); the simulator's runs name their programs",
	},
	{
		Name:   "the data model imports no tool",
		From:   []string{"dcpi/analysis"},
		Forbid: []string{"dcpi/analysis/..."},
		Why:    "Source, MemSource and sample sets are what every tool reads; the tools build on them, never the reverse",
	},
	{
		Name:   "symbolization knows no report",
		From:   []string{"dcpi/analysis/symbolize"},
		Forbid: []string{"dcpi/analysis/..."},
		Allow:  []string{"dcpi/analysis"},
		Why:    "every tool names procedures through it alike; it reads the data model and the images only",
	},
	{
		Name:   "the reports are the flat tools",
		From:   []string{"dcpi/analysis/report"},
		Forbid: []string{"dcpi/analysis/..."},
		Allow:  []string{"dcpi/analysis", "dcpi/analysis/symbolize"},
		Why:    "dcpicalc, ProfileMe, the pprof export and the web build on the reports; the reports build on none of them",
	},
	{
		Name:   "only the pprof export imports pprof's format",
		From:   []string{"dcpi/analysis/..."},
		Except: []string{"dcpi/analysis/pprofexport", "dcpi/analysis/web"},
		Forbid: []string{"github.com/google/pprof/..."},
		Why:    "pprofexport builds every pprof profile; the web only hands one over (its Backend's Pprof)",
	},
	{
		Name:       "path profiles in wire form link no simulator",
		From:       []string{"dcpi/analysis/fleetpaths"},
		Forbid:     []string{"dcpi/hwsim", "dcpi/hwsim/timing", "dcpi/hwsim/vmunix", "dcpi/hwsim/ev6", "dcpi/analysis/oracle"},
		Transitive: true,
		Why:        "dcpi pp upload and fleet convert profiles; ground truth is named by paths.OracleSource",
	},
	{
		Name:   "loadgen's recordings are pure",
		From:   []string{"dcpi/loadgen"},
		Forbid: []string{"dcpi/..."},
		Allow:  []string{"dcpi/wire/...", "dcpi/internal/..."},
		Why:    "a recording and its rewriting are data; running a load is another package's",
	},
	{
		Name:   "the tools' database sits above the analyses",
		From:   []string{"dcpi/analysis/...", "dcpi/storage/...", "dcpi/coordinator/..."},
		Forbid: []string{"dcpi/profiledb/..."},
		Why:    "profiledb opens a local database or the cluster's reader for the commands; the analyses read through their Source interfaces",
	},
}
