package enroll

import (
	"fmt"
	"io"
	"time"

	"dcpi/transport/auth"
)

// loadWait is how long AddHost waits for a running server to load the key
// it issued (the server polls its key store every second).
const loadWait = 3 * time.Second

// AddHost issues host req.Host a key in st, as "dcpi nats-server
// add-host" does, and reports it on w. With req.URLs it writes the host's
// bundle to bundle (default HOST.dcpi-bundle, never replaced) and fails if
// no running server loads the key in time; with none, it prints the key
// file itself, and a server that has not loaded it yet is only noted (the
// key is good once a server starts on the store).
func AddHost(w io.Writer, st *auth.Store, req Request, bundle string, now time.Time) error {
	if req.URLs != nil {
		if bundle == "" {
			bundle = req.Host + ".dcpi-bundle"
		}
		b, err := IssueFile(st, req, bundle, now)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "host %s: key %s, bundle %s, to install before %s\n", b.Host, b.Key, bundle, b.Expires.Format(time.RFC3339))
		return st.WaitLoaded(b.Key, loadWait)
	}
	k, err := st.AddHost(req.Host)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "host %s: key %s\n%s\n", k.Host, k.PublicKey, k.File)
	if err := st.WaitLoaded(k.PublicKey, loadWait); err != nil {
		fmt.Fprintf(w, "not loaded yet: %v\n", err)
	}
	if st.HasCA() {
		fmt.Fprintf(w, "the host verifies the server with %s (nats.ca)\n", st.CAFile())
	}
	return nil
}
