package transport

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestImageFiles: a file is uploaded once under its key, read back
// byte for byte, and a key never uploaded is ErrImageNotFound, before and
// after the bucket exists.
func TestImageFiles(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	_, js := connect(t, ts.URL())
	ensure(t, js)
	ctx := testCtx(t, 30*time.Second)
	key, other := wiretest.RandKey(r), wiretest.RandKey(r)
	if _, err := FetchImageFile(ctx, js, key); !errors.Is(err, ErrImageNotFound) {
		t.Fatalf("fetch before any upload: %v", err)
	}
	data := make([]byte, 300_000) // several object store chunks
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for i, want := range []bool{true, false} {
		uploaded, err := PutImageFile(ctx, js, key, data)
		if err != nil || uploaded != want {
			t.Fatalf("upload %d: uploaded %v, %v; want %v", i+1, uploaded, err, want)
		}
	}
	got, err := FetchImageFile(ctx, js, key)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetch: %d bytes, %v", len(got), err)
	}
	if _, err := FetchImageFile(ctx, js, other); !errors.Is(err, ErrImageNotFound) {
		t.Fatalf("fetch of a key never uploaded: %v", err)
	}
	if _, err := PutImageFile(ctx, js, wire.ImageKey{}, data); err == nil {
		t.Fatal("upload under the zero key succeeded")
	}
}
