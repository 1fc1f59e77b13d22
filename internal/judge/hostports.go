package judge

import (
	"path/filepath"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
)

// hostPorts judges a saved port listing (ibstat, ibstatus, ibv_devinfo):
// its parser, beside the host model, reads it into a partial snapshot, and
// doctor's own port rules judge that snapshot, so a saved output and a
// live host get the same verdict. The payload is the snapshot.
func hostPorts(parse func([]byte) *host.Snapshot) func(string, []byte, Options) ([]check.Finding, any, error) {
	return func(name string, b []byte, opt Options) ([]check.Finding, any, error) {
		s := parse(b)
		s.Hostname = filepath.Base(name)
		return hostcheck.Doctor([]*host.Snapshot{s}, portOptions(opt)), s, nil
	}
}

// portOptions are doctor's options for a saved port listing: judge's
// expectations, and only the rules such a listing can feed.
func portOptions(opt Options) hostcheck.Options {
	return hostcheck.Options{Expect: opt.Expect, Only: hostcheck.PortRules}
}
