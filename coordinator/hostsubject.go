package coordinator

import (
	"dcpi/wire/coordproto"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"dcpi/wire"
)

// ErrOtherHost is wrapped (with ErrBadRequest) by the refusal of a host
// request whose body names another host than its subject: with per-host
// credentials, a host asking about or acting for another host.
var ErrOtherHost = errors.New("request names another host than its subject")

// hostSubject is the subject of request base about host (coordproto.HostSubject).
// A host name no subject can carry is refused, as ErrBadRequest.
func hostSubject(base, host string) (string, error) {
	s, err := coordproto.HostSubject(base, host)
	if err != nil {
		return "", fmt.Errorf("coordinator: %w: %w", ErrBadRequest, err)
	}
	return s, nil
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
