package inventory

import (
	"path"

	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// phy reads the physical-layer outputs saved in the tree (docs/phy.md:
// var/lib/rdmalab/phy/<ibdev>-<port>.<tool>.<ext>) into the snapshot, so
// a captured host carries its ports' PHY facts. No directory: nothing.
func (c *collector) phy() {
	names, err := c.fs.ReadDir(phy.Dir)
	if err != nil {
		if !hostfs.IsNotExist(err) {
			c.fail("phy", phy.Dir, err)
		}
		return
	}
	for _, n := range names {
		p := path.Join(phy.Dir, n)
		if c.fs.IsDir(p) {
			continue
		}
		b, err := c.fs.ReadFile(p)
		if err != nil {
			c.fail("phy "+n, p, err)
			continue
		}
		ps, err := phy.Named(b, p, c.snap.Hostname)
		if err != nil {
			c.fail("phy "+n, p, err)
			continue
		}
		c.snap.Phy = append(c.snap.Phy, ps...)
	}
}
