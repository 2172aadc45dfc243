// Package coordproto holds the names of the coordinator's NATS protocol
// that more than one side must agree on: the service's subjects, its
// query kinds, and which requests a host makes about itself (and so on a
// subject of its own). The coordinator serves them, its client sends on
// them, and transport/auth grants them per role — without linking Raft or
// the database, the way etcd raft keeps its messages in raftpb. It owns
// names only: the requests' bodies and their handling are the
// coordinator's.
package coordproto

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"dcpi/wire"
)

// NATS subjects of the service. Leader subjects are served by the leader
// alone (it subscribes when it gains leadership and unsubscribes when it
// loses it), query subjects by any replica in a queue group.
const (
	SubjectPropose       = "dcpi.coord.propose"
	SubjectRegister      = "dcpi.coord.register"
	SubjectHeartbeat     = "dcpi.coord.heartbeat"
	SubjectAck           = "dcpi.coord.ack"
	SubjectCut           = "dcpi.coord.cut"
	SubjectMembersAdd    = "dcpi.coord.members.add"
	SubjectMembersRemove = "dcpi.coord.members.remove"
	SubjectUploadPaths   = "dcpi.coord.paths.upload"
	SubjectIngestValues  = "dcpi.coord.values.ingest"
	// SubjectProcesses: a host's process records (a host request).
	SubjectProcesses = "dcpi.coord.processes"
	// SubjectQuery + kind: served by any replica from its own database.
	SubjectQuery = "dcpi.coord.query."
	// SubjectLinearQuery + kind: served by the leader after it has
	// confirmed its leadership and applied everything committed before.
	SubjectLinearQuery = "dcpi.coord.lquery."
	// SubjectReplica + id + ".query." + kind: one replica's queries, so the
	// pages of one profile come from one database.
	SubjectReplica = "dcpi.coord.replica."
	// SubjectReplicaQueries matches every replica's queries: what a
	// client that queries must also be allowed to publish to, for the
	// pages after the first.
	SubjectReplicaQueries = SubjectReplica + "*.query.>"
)

// Query kinds, the last token of a query subject.
const (
	QueryEpochs        = "epochs"
	QueryNodes         = "nodes"
	QueryImages        = "images"
	QueryApplied       = "applied"
	QueryTotals        = "totals"
	QueryProfile       = "profile"
	QueryStacks        = "stacks"
	QueryProfileMe     = "profileme"
	QueryMeHistory     = "profileme-history"
	QueryMeAddrs       = "profileme-addrs"
	QueryPathImages    = "pathimages"    // storage.PathImages, as []PathImageInfo
	QueryPaths         = "paths"         // storage.PathProfile, as its wire encoding
	QueryValues        = "values"        // storage.ValueLists, skip-paged ValueListRow
	QueryValueTotals   = "valuetotals"   // storage.ValueTotals, as ValueTotalsReply
	QueryValuesApplied = "valuesapplied" // storage.ValuesApplied, as ValuesAppliedReply
	QueryProcesses     = "processes"     // storage.Processes, skip-paged
	// QueryStreamTail and QueryValuesTail: what the batch and value
	// streams still hold of a host (the newest message of each of its
	// subjects), read by the coordinator for a resuming agent, whose
	// credentials may not read the streams (TailReply, ValuesTailReply).
	QueryStreamTail = "streamtail"
	QueryValuesTail = "valuestail"
)

// hostRequests are the requests a node agent makes about itself: its
// registration, heartbeats, epoch acknowledgements, and the applied
// sequences it resumes after. Each goes to base + "." + host (HostSubject),
// so that the server's per-host permissions confine a host's credentials
// to requests about that host (HostRequestSubjects, transport/auth), and
// the coordinator refuses a body that names another host than its
// subject. Every request body of these bases carries the host as its JSON
// field Host. A request a host makes about itself belongs here, so that it
// is confined the same way.
var hostRequests = []string{
	SubjectRegister, SubjectHeartbeat, SubjectAck, SubjectProcesses,
	SubjectQuery + QueryApplied, SubjectLinearQuery + QueryApplied,
	SubjectQuery + QueryValuesApplied, SubjectLinearQuery + QueryValuesApplied,
	SubjectQuery + QueryStreamTail, SubjectQuery + QueryValuesTail,
}

// ErrBadHost is wrapped by HostSubject's refusal of a host name no subject
// can carry.
var ErrBadHost = errors.New("no subject can carry this host name")

// IsHostRequest says whether base is served per host, on base + ".*".
func IsHostRequest(base string) bool { return slices.Contains(hostRequests, base) }

// HostSubject is the subject of request base about host, base + "." + host.
func HostSubject(base, host string) (string, error) {
	if err := wire.CheckHost(host); err != nil {
		return "", fmt.Errorf("%s: %w: %w", base, ErrBadHost, err)
	}
	return base + "." + host, nil
}

// HostRequestSubjects are the subjects of host's requests about itself,
// the only coordinator subjects a host's credentials may publish to
// (transport/auth). They come from hostRequests, as the client's and the
// service's do, so a host request added there is confined the same way.
func HostRequestSubjects(host string) ([]string, error) {
	out := make([]string, 0, len(hostRequests))
	for _, base := range hostRequests {
		s, err := HostSubject(base, host)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// AggregatorRequestSubjects are the coordinator subjects an aggregator's
// credentials may publish to: the proposals of merged batches, value
// records and path uploads it commits. Not epoch cuts, membership or
// any host's requests, which are the coordinator role's and the hosts'.
func AggregatorRequestSubjects() []string {
	return []string{SubjectPropose, SubjectIngestValues, SubjectUploadPaths}
}

// InboxRoot begins every reply subject a service answers on: nats.go's
// inboxes, and each credentialed client's own (transport.InboxPrefix:
// _INBOX.<its key>), the only subjects a client other than the
// coordinator may subscribe to.
const InboxRoot = "_INBOX."

// IsReplyInbox reports whether reply is a subject a service may answer a
// request on: an inbox under InboxRoot, with no wildcard or empty token.
// A reply subject is a publish the server's permissions do not check (it
// is the responder's publish, on the responder's credentials), so a
// service that answered on any subject would let a requester publish
// where only the service may: cut an epoch, delete a stream, or store a
// batch under another host's name.
func IsReplyInbox(reply string) bool {
	rest, ok := strings.CutPrefix(reply, InboxRoot)
	if !ok || rest == "" {
		return false
	}
	for _, tok := range strings.Split(rest, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return false
		}
	}
	return true
}
