package longtest

import "testing"

func TestKeep(t *testing.T) {
	t.Setenv("DCPI_LONG", "")
	if Keep("sort", "interp") || !Keep("interp", "interp") {
		t.Error("without DCPI_LONG only the subset runs")
	}
	t.Setenv("DCPI_LONG", "1")
	if !Keep("sort", "interp") {
		t.Error("with DCPI_LONG=1 every case runs")
	}
}
