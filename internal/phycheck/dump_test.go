package phycheck

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/phy"
)

func TestDumpTmp(t *testing.T) {
	if os.Getenv("PHYDUMP") == "" {
		t.Skip()
	}
	fs, _ := filepath.Glob("../../../../shared/testdata/*/*")
	fs = append(fs, "../../../../shared/testdata/ibtools/cx7-ndr-b2b/mlxlink_show_mo_NDR_osfp_dac.txt")
	for _, f := range fs {
		b, _ := os.ReadFile(f)
		var out []check.Finding
		var err error
		var ps []phy.Port
		switch {
		case phy.SniffMlxlink(b):
			ps, err = phy.ParseMlxlink(b, filepath.Base(f))
		case phy.SniffShowFEC(b):
			ps, err = phy.ParseShowFEC(b, filepath.Base(f))
		case phy.SniffIBDiag(b):
			d, e := phy.ParseIBDiag(b, filepath.Base(f))
			err = e
			if e == nil {
				out = IBDiag(d)
			}
		case phy.SniffModule(b):
			ps, err = phy.ParseModule(b, filepath.Base(f))
		case phy.SniffEthtoolS(b):
			ps, err = phy.ParseEthtoolS(b, filepath.Base(f))
		default:
			continue
		}
		out = append(out, Ports(ps)...)
		fmt.Printf("=== %s err=%v\n", filepath.Base(f), err)
		for _, x := range out {
			fmt.Printf("  %s %s [%s|%s] %s\n     fix=%q\n", x.Outcome, x.Check, x.Host, x.Subject, x.Message, x.Fix)
		}
	}
}
