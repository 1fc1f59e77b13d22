package cli

import (
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/spf13/cobra"
)

// hostInput is how a command gets its hosts: live, --root, or --snapshot.
type hostInput struct {
	root      string
	snapshots []string
	cmd       *cobra.Command
}

func (in *hostInput) register(c *cobra.Command, multi bool) {
	in.cmd = c
	c.Flags().StringVar(&in.root, "root", "/", "read the host from this root: a directory holding sys/, a copy of /sys/class/infiniband, a capture .tar.gz (rdmalab gather) or .tar.bz2 (hwloc-gather-topology) or a snapshot file")
	help := "read a saved snapshot instead of a host (from 'rdmalab inventory --output json'; example:NAME for a built-in one)"
	if multi {
		help += "; repeat for a fleet"
	}
	c.Flags().StringArrayVar(&in.snapshots, "snapshot", nil, help)
}

// load returns the hosts to work on. Every source goes through
// intake.Host; a source it refuses is exit 2 with its one-line reason.
func (in *hostInput) load() ([]*host.Snapshot, error) {
	sources := in.snapshots
	if in.cmd != nil && in.cmd.Flags().Changed("root") && len(sources) > 0 {
		// Never one silently ignored: they name two different hosts.
		return nil, usageErr("--root %s and --snapshot %s name two different hosts: give one of them", in.root, sources[0])
	}
	if len(sources) == 0 {
		sources = []string{in.root}
	}
	var out []*host.Snapshot
	for _, p := range sources {
		s, err := intake.Host(p)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		out = append(out, s)
	}
	return out, nil
}

func one(hosts []*host.Snapshot, cmd string) (*host.Snapshot, error) {
	if len(hosts) != 1 {
		return nil, usageErr("%s takes one host; got %d snapshots", cmd, len(hosts))
	}
	return hosts[0], nil
}
