package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"dcpi/wire/coordproto"
)

// ErrCredentials is wrapped by every error about a credentials file that
// cannot be used: missing, unreadable, readable by others, or not holding a
// valid user seed.
var ErrCredentials = errors.New("unusable NATS credentials")

// ErrFileMode is wrapped (with ErrCredentials) when a secret file may be
// read or written by group or others.
var ErrFileMode = errors.New("readable or writable by group or others")

// CheckSecretFile refuses a file holding a secret (a seed, a private key)
// that group or others may read or write. Refused rather than warned
// about, as ssh refuses a private key: a seed others could read may
// already be theirs, and a warning in a role's log is read after the fact.
func CheckSecretFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s does not exist", ErrCredentials, path)
		}
		return fmt.Errorf("%w: %v", ErrCredentials, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrCredentials, path)
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %04o, %w; chmod 600 %s", ErrCredentials, path, m, ErrFileMode, path)
	}
	return nil
}

// InboxPrefix is the reply-subject prefix of the client whose NKey is
// publicKey: "_INBOX.<public key>". Each user may subscribe only below its
// own prefix, so one cannot read the replies sent to another.
func InboxPrefix(publicKey string) string { return coordproto.InboxRoot + publicKey }

// credsOptions reads path, a user JWT credentials file or an NKey user
// seed file, into the connection's options. A seed is held in memory from
// here on, so the connection signs every reconnect's nonce with the key it
// started with, whatever later happens to the file.
func credsOptions(path string) ([]nats.Option, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist", ErrCredentials, path)
		}
		return nil, fmt.Errorf("%w: %v", ErrCredentials, err)
	}
	if bytes.Contains(data, []byte("BEGIN NATS USER JWT")) {
		return []nats.Option{nats.UserCredentials(path)}, nil
	}
	if err := CheckSecretFile(path); err != nil {
		return nil, err
	}
	kp, err := ParseUserSeed(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCredentials, path, err)
	}
	pub, _ := kp.PublicKey()
	sign := func(nonce []byte) ([]byte, error) { return kp.Sign(nonce) }
	return []nats.Option{nats.Nkey(pub, sign), nats.CustomInboxPrefix(InboxPrefix(pub))}, nil
}

// ParseUserSeed reads an NKey user seed, bare ("SU...") or in the
// decorated form nsc and dcpi write, and checks it is a user's seed.
func ParseUserSeed(data []byte) (nkeys.KeyPair, error) {
	kp, err := nkeys.ParseDecoratedNKey(data)
	if err != nil {
		return nil, fmt.Errorf("no NKey seed in it: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("no NKey seed in it: %w", err)
	}
	if pre, _, err := nkeys.DecodeSeed(seed); err != nil || pre != nkeys.PrefixByteUser {
		return nil, errors.New("the NKey seed is not a user's (want a seed starting SU)")
	}
	return kp, nil
}
