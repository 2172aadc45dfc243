package values

import "testing"

func TestBinLatency(t *testing.T) {
	for _, c := range []struct {
		cycles uint64
		want   Level
	}{{1, LevelDcache}, {3, LevelDcache}, {4, LevelDcache}, {9, LevelScache}, {12, LevelScache},
		{31, LevelBcache}, {38, LevelDcache}, {44, LevelScache}, {66, LevelBcache}, {143, LevelMemory},
		{150, LevelMemory}, {178, LevelMemory}, {1000, LevelMemory}} {
		if got := BinLatency(c.cycles); got != c.want {
			t.Errorf("BinLatency(%d) = %v, want %v", c.cycles, got, c.want)
		}
	}
}
