package phy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestDumpTmp(t *testing.T) {
	if os.Getenv("PHYDUMP") == "" {
		t.Skip()
	}
	fs, _ := filepath.Glob("../../../../shared/testdata/*/*")
	for _, f := range fs {
		b, _ := os.ReadFile(f)
		var v any
		var err error
		switch {
		case SniffMlxlink(b):
			v, err = ParseMlxlink(b, filepath.Base(f))
		case SniffShowFEC(b):
			v, err = ParseShowFEC(b, filepath.Base(f))
		case SniffIBDiag(b):
			v, err = ParseIBDiag(b, filepath.Base(f))
		case SniffModule(b):
			v, err = ParseModule(b, filepath.Base(f))
		case SniffEthtoolS(b):
			v, err = ParseEthtoolS(b, filepath.Base(f))
		default:
			continue
		}
		j, _ := json.MarshalIndent(v, "", " ")
		t.Logf("=== %s err=%v\n%s", f, err, j)
	}
}
