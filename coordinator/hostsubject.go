package coordinator

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"dcpi/wire"
)

// hostRequests are the requests a node agent makes about itself: its
// registration, heartbeats, epoch acknowledgements, and the applied
// sequences it resumes after. Each goes to base + "." + host (hostSubject),
// so that the server's per-host permissions confine a host's credentials
// to requests about that host (HostRequestSubjects, transport/auth), and
// the coordinator refuses a body that names another host than its
// subject (checkRequestHost). Every request body of these bases carries
// the host as its JSON field Host. A request a host makes about itself
// belongs here, so that it is confined the same way.
var hostRequests = []string{
	SubjectRegister, SubjectHeartbeat, SubjectAck,
	SubjectQuery + QueryApplied, SubjectLinearQuery + QueryApplied,
	SubjectQuery + QueryValuesApplied, SubjectLinearQuery + QueryValuesApplied,
}

// ErrOtherHost is wrapped (with ErrBadRequest) by the refusal of a host
// request whose body names another host than its subject: with per-host
// credentials, a host asking about or acting for another host.
var ErrOtherHost = errors.New("request names another host than its subject")

// isHostRequest says whether base is served per host, on base + ".*".
func isHostRequest(base string) bool { return slices.Contains(hostRequests, base) }

// hostSubject is the subject of request base about host, base + "." + host.
// A host name no subject can carry is refused, as ErrBadRequest.
func hostSubject(base, host string) (string, error) {
	if err := wire.CheckHost(host); err != nil {
		return "", fmt.Errorf("coordinator: %s: %w: %w", base, ErrBadRequest, err)
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
		s, err := hostSubject(base, host)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// checkRequestHost checks a host request on subject (base + "." + host)
// against its body: the body's Host must be a valid host and the
// subject's. Both failures are ErrBadRequest (nothing was done); the
// second also wraps ErrOtherHost, and returns the body's host for the log.
// The body is decoded with the same encoding/json rules the request's
// handler uses, so both read the same Host.
func checkRequestHost(base, subject string, body []byte) (named string, err error) {
	subjectHost, ok := strings.CutPrefix(subject, base+".")
	if !ok {
		return "", fmt.Errorf("%w: %s: not a subject of %s.<host>", ErrBadRequest, subject, base)
	}
	var req struct{ Host string }
	if err := json.Unmarshal(body, &req); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrBadRequest, subject, err)
	}
	if err := wire.CheckHost(req.Host); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrBadRequest, subject, err)
	}
	if req.Host != subjectHost {
		return req.Host, fmt.Errorf("%w: %s: %w: body names host %q", ErrBadRequest, subject, ErrOtherHost, req.Host)
	}
	return req.Host, nil
}
