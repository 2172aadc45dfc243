package simhost

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"dcpi/storage"
	"dcpi/wire"
)

// fakeStream is a stream holding the given newest batch per CPU.
type fakeStream struct {
	last []storage.StreamState
	err  error
	read *[]string // the order of reads
}

func (s fakeStream) StreamTail(_ context.Context, cpus int) ([]storage.StreamState, error) {
	*s.read = append(*s.read, "stream")
	return s.last, s.err
}

// fakeDB is a database that applied the given state per CPU.
type fakeDB struct {
	applied []storage.StreamState
	read    *[]string
}

func (d fakeDB) StreamState(_ context.Context, cpu uint16) (storage.StreamState, error) {
	*d.read = append(*d.read, "db")
	if int(cpu) >= len(d.applied) {
		return storage.StreamState{}, errors.New("no such stream")
	}
	return d.applied[cpu], nil
}

func TestResume(t *testing.T) {
	batch := func(seq, delivered, accounted uint64) storage.StreamState {
		return storage.StreamState{Seq: seq, Delivered: delivered, Accounted: accounted}
	}
	for _, c := range []struct {
		name    string
		stream  []storage.StreamState
		applied []storage.StreamState
		want    ResumePoint
	}{
		{"nothing yet", []storage.StreamState{{}, {}}, []storage.StreamState{{}, {}},
			ResumePoint{First: []uint64{1, 1}, Carried: []map[string]uint64{nil, nil}}},
		// cpu 0: the stream holds batches the database has not applied;
		// cpu 1: the database is ahead of a stream emptied by its commits.
		{"stream and database", []storage.StreamState{batch(9, 100, 90), batch(2, 10, 10)},
			[]storage.StreamState{{Seq: 7, Delivered: 80, Accounted: 80}, {Seq: 5, Delivered: 50, Accounted: 47}},
			ResumePoint{First: []uint64{10, 6}, Carried: []map[string]uint64{{wire.DropCrashLost: 10}, {wire.DropCrashLost: 3}},
				Delivered: 150, Lost: 13}},
		{"nothing lost", []storage.StreamState{{}, batch(4, 20, 20)}, []storage.StreamState{{Seq: 3, Delivered: 30, Accounted: 30}, {}},
			ResumePoint{First: []uint64{4, 5}, Carried: []map[string]uint64{nil, nil}, Delivered: 50}},
	} {
		var reads []string
		got, err := Resume(context.Background(), fakeStream{last: c.stream, read: &reads}, fakeDB{applied: c.applied, read: &reads}, 2)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if !reflect.DeepEqual(reads, []string{"stream", "db", "db"}) {
			t.Errorf("%s: read %v; the stream must be read before the database", c.name, reads)
		}
	}
}

func TestResumeRejects(t *testing.T) {
	var reads []string
	ok := fakeDB{applied: []storage.StreamState{{}, {}}, read: &reads}
	for _, c := range []struct {
		name   string
		stream fakeStream
		db     fakeDB
		cpus   int
	}{
		{"no CPUs", fakeStream{read: &reads}, ok, 0},
		{"stream error", fakeStream{err: errors.New("no JetStream"), read: &reads}, ok, 2},
		{"stream answers for other CPUs", fakeStream{last: []storage.StreamState{{}}, read: &reads}, ok, 2},
		{"database error", fakeStream{last: []storage.StreamState{{}, {}}, read: &reads}, fakeDB{applied: []storage.StreamState{{}}, read: &reads}, 2},
		{"accounted beyond delivered", fakeStream{last: []storage.StreamState{{Seq: 3, Delivered: 5, Accounted: 6}, {}}, read: &reads}, ok, 2},
	} {
		if rp, err := Resume(context.Background(), c.stream, c.db, c.cpus); err == nil {
			t.Errorf("%s: resumed at %+v", c.name, rp)
		}
	}
}
