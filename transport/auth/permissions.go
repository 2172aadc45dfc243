package auth

import (
	"dcpi/wire/coordproto"

	"github.com/nats-io/nats-server/v2/server"

	"dcpi/transport"
)

// Permissions are what the server lets a user of role do; host names the
// host of a Host user, publicKey is the user's key (its inbox, see
// transport.InboxPrefix). Every role but Coordinator may subscribe only to
// its own inbox, so no one reads another's replies.
//
// An aggregator may consume the streams it merges and propose to the
// coordinator (transport.AggregatorJetStreamAPI,
// coordproto.AggregatorRequestSubjects), nothing of the coordinator
// role's: no epoch cut, membership change or stream deletion.
//
// A host may publish its own subjects (transport.HostPublishSubjects:
// batches of every CPU, path uploads, value records), upload images (shared,
// content-addressed), make the JetStream lookups a resuming agent makes
// (the newest message of its own subjects only: transport.HostJetStreamAPI),
// and send the coordinator its registrations, heartbeats, epoch
// acknowledgements and applied-sequence questions, each on a subject of
// its own (coordproto.HostRequestSubjects; the coordinator refuses a
// body naming another host). It may not publish another host's subjects,
// make requests about another host, consume or acknowledge any stream,
// change or delete a stream, or query profiles.
func Permissions(role Role, host, publicKey string) *server.Permissions {
	inbox := &server.SubjectPermission{Allow: []string{transport.InboxPrefix(publicKey) + ".>"}}
	switch role {
	case Coordinator:
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{">"}},
			Subscribe: &server.SubjectPermission{Allow: []string{">"}},
		}
	case Aggregator:
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: append(transport.AggregatorJetStreamAPI(),
				coordproto.AggregatorRequestSubjects()...)},
			Subscribe: inbox,
		}
	case Query:
		pub := append([]string{coordproto.SubjectQuery + ">", coordproto.SubjectLinearQuery + ">", coordproto.SubjectReplicaQueries, "$JS.API.INFO"},
			transport.ImageReadAPI()...)
		return &server.Permissions{Publish: &server.SubjectPermission{Allow: pub}, Subscribe: inbox}
	case Host:
		own, err := transport.HostPublishSubjects(host)
		if err != nil {
			// A name no subject can carry gets no publish at all.
			return &server.Permissions{Publish: &server.SubjectPermission{Deny: []string{">"}}, Subscribe: inbox}
		}
		api, err := transport.HostJetStreamAPI(host)
		if err != nil {
			return &server.Permissions{Publish: &server.SubjectPermission{Deny: []string{">"}}, Subscribe: inbox}
		}
		requests, err := coordproto.HostRequestSubjects(host)
		if err != nil {
			return &server.Permissions{Publish: &server.SubjectPermission{Deny: []string{">"}}, Subscribe: inbox}
		}
		pub := append(own, transport.ImagePublishSubjects()...)
		pub = append(pub, api...)
		pub = append(pub, requests...)
		return &server.Permissions{Publish: &server.SubjectPermission{Allow: pub}, Subscribe: inbox}
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Deny: []string{">"}},
		Subscribe: &server.SubjectPermission{Deny: []string{">"}},
	}
}
