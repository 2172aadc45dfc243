package coordinator

import (
	"strings"
	"testing"
	"time"

	"dcpi/storage"
)

// TestWriteEpochsMerged: a merged epoch shows the numbers it holds and
// how many it merged, and a table over more than one day dates its times.
func TestWriteEpochsMerged(t *testing.T) {
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	eps := []EpochInfo{
		{Epoch: storage.Epoch{Number: 1, Start: day, End: day.Add(24 * time.Hour), State: storage.EpochSealed, MergedThrough: 24}},
		{Epoch: storage.Epoch{Number: 25, Start: day.Add(24 * time.Hour), End: day.Add(25 * time.Hour), State: storage.EpochSealed},
			Acks: []storage.EpochAck{{Host: "b"}, {Host: "a", Late: true}}},
		{Epoch: storage.Epoch{Number: 26, Start: day.Add(25 * time.Hour), State: storage.EpochOpen}, Waiting: []string{"c"}},
	}
	var b strings.Builder
	if err := WriteEpochs(&b, eps); err != nil {
		t.Fatal(err)
	}
	const want = `
Epochs:
epoch  state               start                end                  acknowledged by  waiting for
1-24   sealed (24 merged)  2026-11-22 00:00:00  2026-11-23 00:00:00  -                -
25     sealed              2026-11-23 00:00:00  2026-11-23 01:00:00  a (late) b       -
26     open                2026-11-23 01:00:00  -                    -                c
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteEpochs(&b, eps[2:]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "26     open   01:00:00.000  -") {
		t.Errorf("one day's table should print the clock alone:\n%s", b.String())
	}
}
