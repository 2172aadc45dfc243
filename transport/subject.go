package transport

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"dcpi/wire"
)

// StreamName is the one JetStream stream that carries every host's batches,
// on subjects BatchSubject(host).
const StreamName = "DCPI_BATCHES"

// subjectPrefix starts every batch subject; the stream takes subjectPrefix+"*".
const subjectPrefix = "dcpi.batch."

// ImageBucket is the JetStream object store of image records: object name
// ImageKey.String(), content the record's wire encoding. Images are
// content-addressed, so a name is written once and never changes.
const ImageBucket = "dcpi-images"

// ErrHost is wrapped by errors about a host name that cannot be a subject
// token.
var ErrHost = errors.New("bad host for a NATS subject")

// CheckHost reports whether host can name a node on the wire and in a NATS
// subject: wire.CheckHost's rules, and none of the bytes NATS gives a
// meaning in subjects ('.' separates tokens, '*' and '>' are wildcards,
// white space ends the subject). A fully qualified name such as
// "alpha0.lab" is therefore refused; use its first label or replace the dots.
func CheckHost(host string) error {
	if err := wire.CheckHost(host); err != nil {
		return fmt.Errorf("transport: host %q: %w: %w", host, ErrHost, err)
	}
	if i := strings.IndexFunc(host, func(r rune) bool {
		return r == '.' || r == '*' || r == '>' || unicode.IsSpace(r)
	}); i >= 0 {
		return fmt.Errorf("transport: host %q: %w: byte %d (%q) is special in subjects", host, ErrHost, i, host[i])
	}
	return nil
}

// BatchSubject is the subject a host's batches are published on,
// "dcpi.batch."+host. It refuses hosts CheckHost refuses, so that one host
// can never publish on, or subscribe to, another's subject.
func BatchSubject(host string) (string, error) {
	if err := CheckHost(host); err != nil {
		return "", err
	}
	return subjectPrefix + host, nil
}

// hostOfSubject inverts BatchSubject.
func hostOfSubject(subject string) (string, error) {
	host, ok := strings.CutPrefix(subject, subjectPrefix)
	if !ok {
		return "", fmt.Errorf("transport: subject %q is not a batch subject (%s<host>)", subject, subjectPrefix)
	}
	if err := CheckHost(host); err != nil {
		return "", fmt.Errorf("transport: subject %q: %w", subject, err)
	}
	return host, nil
}

// msgID is the Nats-Msg-Id of a batch, "<host>/<epoch>/<cpu>/<seq>": the
// identity of a batch, so that JetStream drops a resend within the
// duplicate window. The epoch is part of it because a node that restarts in
// a new epoch starts its sequences at 1 again; without the epoch the stream
// would drop its first batches as duplicates of the previous run's.
func msgID(host string, epoch uint64, cpu uint16, seq uint64) string {
	b := make([]byte, 0, len(host)+40)
	b = append(b, host...)
	b = append(b, '/')
	b = strconv.AppendUint(b, epoch, 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, uint64(cpu), 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, seq, 10)
	return string(b)
}
