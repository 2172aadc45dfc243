package auth

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkStoreUsers is what the server's key watch (Watch, every
// WatchInterval) costs it per poll at fleet sizes: "list" reads every
// host's keys (what each poll did, and still does after a change);
// "unchanged" is the fingerprint of the keys' directories that lets a
// poll with nothing issued or revoked skip the listing. %core is the
// share of one core at one poll per WatchInterval.
func BenchmarkStoreUsers(b *testing.B) {
	for _, hosts := range []int{10, 1000} {
		st, err := Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		for i := range hosts {
			if _, err := st.AddHost(fmt.Sprintf("h%04d", i)); err != nil {
				b.Fatal(err)
			}
		}
		perPoll := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(WatchInterval.Nanoseconds())*100, "%core")
		}
		b.Run(fmt.Sprintf("hosts=%d/list", hosts), func(b *testing.B) {
			for b.Loop() {
				users, err := st.Users()
				if err != nil || len(users) != hosts+len(roleFiles) {
					b.Fatalf("%d users, %v", len(users), err)
				}
			}
			perPoll(b)
		})
		b.Run(fmt.Sprintf("hosts=%d/unchanged", hosts), func(b *testing.B) {
			later := time.Now().Add(time.Hour)
			for b.Loop() {
				if _, stable, err := st.keysVersion(later, keysSettle); err != nil || !stable {
					b.Fatal(stable, err)
				}
			}
			perPoll(b)
		})
	}
}

// TestKeysVersion: the fingerprint Watch skips listings on changes with
// every issue and revocation, also of a host that already had a key,
// stays put otherwise, and is not trusted while a change is recent.
func TestKeysVersion(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return time.Now().Add(time.Hour) }
	version := func() string {
		t.Helper()
		v, stable, err := st.keysVersion(later(), keysSettle)
		if err != nil || !stable {
			t.Fatalf("keysVersion: %v, stable %v", err, stable)
		}
		return v
	}
	// Directory times move with the kernel's clock tick; wait one out
	// between changes so each is visible by itself.
	tick := func() { time.Sleep(20 * time.Millisecond) }
	v0 := version()
	if version() != v0 {
		t.Fatal("fingerprint moved with nothing changed")
	}
	tick()
	k1, err := st.AddHost("alpha1")
	if err != nil {
		t.Fatal(err)
	}
	v1 := version()
	if v1 == v0 {
		t.Error("issuing a new host's key left the fingerprint")
	}
	tick()
	if _, err := st.AddHost("alpha1"); err != nil { // a rotation: a second key in the same directory
		t.Fatal(err)
	}
	v2 := version()
	if v2 == v1 {
		t.Error("issuing a second key of a host left the fingerprint")
	}
	tick()
	if _, err := st.RevokeHost("alpha1", k1.PublicKey); err != nil {
		t.Fatal(err)
	}
	if v3 := version(); v3 == v2 {
		t.Error("revoking a key left the fingerprint")
	}
	if _, stable, _ := st.keysVersion(time.Now(), keysSettle); stable {
		t.Error("a fingerprint a moment after a change is trusted")
	}
}
