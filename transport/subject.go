package transport

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"dcpi/wire"
)

// StreamName is the one JetStream stream that carries every host's batches,
// on subjects BatchSubject(host, cpu).
const StreamName = "DCPI_BATCHES"

// subjectPrefix starts every batch subject.
const subjectPrefix = "dcpi.batch."

// streamSubject is what the stream takes: exactly two tokens after the
// prefix, host and CPU. Not subjectPrefix+">": a publisher of the per-host
// subjects of before ("dcpi.batch.<host>", see EnsureStream) then finds no
// stream and keeps its batches queued, retrying, instead of storing
// messages every aggregator would have to Term.
const streamSubject = subjectPrefix + "*.*"

// legacySubject matched the batch subjects of before the CPU token,
// "dcpi.batch.<host>"; EnsureStream looks for messages left on them.
const legacySubject = subjectPrefix + "*"

// ImageBucket is the JetStream object store of image records: object name
// ImageKey.String(), content the record's wire encoding. Images are
// content-addressed, so a name is written once and never changes.
const ImageBucket = "dcpi-images"

// ErrHost is wrapped by errors about a host name that cannot be a subject
// token.
var ErrHost = errors.New("bad host for a NATS subject")

// ErrSubject is wrapped by errors about a subject that is not a batch
// subject: another prefix, a missing or extra token, or a CPU token that is
// not a CPU number in canonical decimal.
var ErrSubject = errors.New("not a batch subject")

// CheckHost reports whether host can name a node on the wire and in a NATS
// subject. The rule is wire.CheckHost's, which already refuses every byte
// NATS gives a meaning in subjects (so "alpha0.lab" is refused); the error
// here also wraps ErrHost.
func CheckHost(host string) error {
	if err := wire.CheckHost(host); err != nil {
		return fmt.Errorf("transport: host %q: %w: %w", host, ErrHost, err)
	}
	return nil
}

// BatchSubject is the subject the batches of one (host, CPU) stream are
// published on, "dcpi.batch.<host>.<cpu>" with cpu in decimal (the daemon's
// stream, wire.AllCPUs, is "....65535"). One subject per stream of
// sequence numbers lets LastPublished ask JetStream for the newest batch of
// each. It refuses hosts CheckHost refuses, so that one host can never
// publish on, or subscribe to, another's subjects.
func BatchSubject(host string, cpu uint16) (string, error) {
	if err := CheckHost(host); err != nil {
		return "", err
	}
	return batchSubject(host, cpu), nil
}

// batchSubject is BatchSubject for a host already checked.
func batchSubject(host string, cpu uint16) string {
	b := make([]byte, 0, len(subjectPrefix)+len(host)+6)
	b = append(b, subjectPrefix...)
	b = append(b, host...)
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(cpu), 10)
	return string(b)
}

// hostFilter is the consumer filter of every CPU of host,
// "dcpi.batch.<host>.>".
func hostFilter(host string) (string, error) {
	if err := CheckHost(host); err != nil {
		return "", err
	}
	return subjectPrefix + host + ".>", nil
}

// parseSubject inverts BatchSubject. The CPU token must be canonical
// decimal ("7", not "07" or "+7"), so that each stream has one subject.
func parseSubject(subject string) (host string, cpu uint16, err error) {
	rest, ok := strings.CutPrefix(subject, subjectPrefix)
	if !ok {
		return "", 0, fmt.Errorf("transport: subject %q: %w (%s<host>.<cpu>)", subject, ErrSubject, subjectPrefix)
	}
	host, cpuTok, ok := strings.Cut(rest, ".")
	if !ok {
		return "", 0, fmt.Errorf("transport: subject %q: %w: no CPU token (%s<host>.<cpu>)", subject, ErrSubject, subjectPrefix)
	}
	if err := CheckHost(host); err != nil {
		return "", 0, fmt.Errorf("transport: subject %q: %w", subject, err)
	}
	n, err := strconv.ParseUint(cpuTok, 10, 16)
	if err != nil || strconv.FormatUint(n, 10) != cpuTok {
		return "", 0, fmt.Errorf("transport: subject %q: %w: CPU token %q is not a CPU number in decimal", subject, ErrSubject, cpuTok)
	}
	return host, uint16(n), nil
}

// msgID is the Nats-Msg-Id of a batch, "<host>/<epoch>/<cpu>/<seq>": the
// identity of a batch, so that JetStream drops a resend within the
// duplicate window. The epoch is part of it because a node may start its
// sequences at 1 again in a new epoch (when neither the stream nor the
// profile database holds anything of it, see LastPublished); without the
// epoch the stream would drop its first batches as duplicates of an
// earlier run's.
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
