package inventory

import (
	"path"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// phy reads the physical-layer outputs saved in the tree into the
// snapshot, so a captured host carries its ports' PHY facts.
func (c *collector) phy() {
	ps, errs := ReadPHY(c.fs, c.snap.Hostname)
	c.snap.Phy = append(c.snap.Phy, ps...)
	c.snap.Errors = append(c.snap.Errors, errs...)
}

// ReadPHY reads the physical-layer outputs saved under the root
// (docs/phy.md: var/lib/rdmalab/phy/<ibdev>-<port>.<tool>.<ext>), each port
// named by its file and given hostname. No directory: nothing; a file no
// reader takes is an error naming it, and the rest still reads.
func ReadPHY(fsys *hostfs.FS, hostname string) ([]phy.Port, []host.CollectError) {
	names, err := fsys.ReadDir(phy.Dir)
	if err != nil {
		if hostfs.IsNotExist(err) {
			return nil, nil
		}
		return nil, []host.CollectError{{Subject: "phy", Path: phy.Dir, Error: err.Error()}}
	}
	var out []phy.Port
	var errs []host.CollectError
	for _, n := range names {
		p := path.Join(phy.Dir, n)
		if fsys.IsDir(p) {
			continue
		}
		b, err := fsys.ReadFile(p)
		if err == nil {
			var ps []phy.Port
			if ps, err = phy.Named(b, p, hostname); err == nil {
				out = append(out, ps...)
				continue
			}
		}
		errs = append(errs, host.CollectError{Subject: "phy " + n, Path: p, Error: err.Error()})
	}
	return out, errs
}
