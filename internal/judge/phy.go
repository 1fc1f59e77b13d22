package judge

import (
	"path/filepath"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/phy"
	"github.com/rdmalab/rdmalab/internal/phycheck"
)

// The physical-layer formats parse into phy's per-port facts and are
// judged by phycheck's rules; the payload is the facts.

func judgePHY(parse func([]byte, string) ([]phy.Port, error)) func(string, []byte, Options) ([]check.Finding, any, error) {
	return func(name string, b []byte, _ Options) ([]check.Finding, any, error) {
		ps, err := parse(b, filepath.Base(name))
		if err != nil {
			return nil, nil, err
		}
		return phycheck.Ports(ps), ps, nil
	}
}

func judgeIBDiag(name string, b []byte, _ Options) ([]check.Finding, any, error) {
	d, err := phy.ParseIBDiag(b, filepath.Base(name))
	if err != nil {
		return nil, nil, err
	}
	return phycheck.IBDiag(d), d, nil
}
