package transport

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

// FuzzParseUserSeed feeds the credentials reader (a role's nats.creds or
// DCPI_NATS_CREDS, and the auth store's seed files) arbitrary bytes: it
// returns a user's key pair or an error, never panics; a key pair it
// returns signs what its public key verifies, and its seed, bare or in
// the decorated form dcpi writes, parses back to the same key.
func FuzzParseUserSeed(f *testing.F) {
	// A fixed key: the corpus is reproducible and no secret of any role.
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	op, _ := nkeys.FromRawSeed(nkeys.PrefixByteOperator, bytes.Repeat([]byte{9}, 32))
	opSeed, _ := op.Seed()
	for _, s := range []string{
		string(seed),
		fmt.Sprintf("# dcpi NATS credentials: node alpha0, public key %s.\n# Secret: keep it mode 0600.\n%s\n", pub, seed),
		"-----BEGIN USER NKEY SEED-----\n" + string(seed) + "\n------END USER NKEY SEED------\n",
		string(opSeed), pub, "SU", "", strings.Repeat("-", 40) + "\n",
	} {
		f.Add([]byte(s))
	}
	nonce := []byte("nonce")
	f.Fuzz(func(t *testing.T, data []byte) {
		kp, err := ParseUserSeed(data)
		if err != nil {
			if kp != nil {
				t.Fatalf("key pair and error %v", err)
			}
			return
		}
		seed, err := kp.Seed()
		if err != nil || !bytes.HasPrefix(seed, []byte("SU")) {
			t.Fatalf("seed %q, %v: not a user's", seed, err)
		}
		pub, err := kp.PublicKey()
		if err != nil || !nkeys.IsValidPublicUserKey(pub) {
			t.Fatalf("public key %q, %v", pub, err)
		}
		sig, err := kp.Sign(nonce)
		if err != nil {
			t.Fatal(err)
		}
		v, err := nkeys.FromPublicKey(pub)
		if err != nil || v.Verify(nonce, sig) != nil {
			t.Fatalf("signature does not verify: %v", err)
		}
		for _, again := range [][]byte{seed, []byte("# c\n" + string(seed) + "\n")} {
			kp2, err := ParseUserSeed(again)
			if err != nil {
				t.Fatalf("seed %q does not parse back: %v", again, err)
			}
			if pub2, _ := kp2.PublicKey(); pub2 != pub {
				t.Fatalf("seed parses back as %s, want %s", pub2, pub)
			}
		}
	})
}
