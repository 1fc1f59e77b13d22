package cli

import (
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

func newInventoryCmd() *cobra.Command {
	var in hostInput
	var output format
	c := &cobra.Command{
		Use:   "inventory",
		Short: "Map a host: NUMA, CPUs, PCI tree, GPUs, RDMA ports, GIDs, netdevs, kernel",
		Long: `inventory reads sysfs and procfs (never the hardware itself, so no root is
needed) and prints the host as a person reads it: NUMA nodes and CPUs, a
device locality map, the GPU↔NIC affinity matrix (as nvidia-smi topo -m),
RDMA ports with their state, rate and link layer, and the GID table (as
show_gids). Anything unreadable is listed at the end; it never hides the rest.

--output json prints the snapshot (schema in docs/snapshot.md) that every
other command accepts with --snapshot.`,
		Example: `  rdmalab inventory
  rdmalab inventory --root ./captured-host       # a tree copied from another machine
  rdmalab inventory --root host.tar.gz           # a capture from 'rdmalab gather'
  rdmalab inventory --output json > host.json    # the snapshot
  rdmalab inventory --snapshot host.json         # read it back`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hosts, err := in.load()
			if err != nil {
				return err
			}
			s, err := one(hosts, "inventory")
			if err != nil {
				return err
			}
			if output == "json" {
				return s.Encode(cmd.OutOrStdout())
			}
			report.Inventory(cmd.OutOrStdout(), s)
			return nil
		},
	}
	in.register(c, false)
	outputFlag(c.Flags(), &output, "table or json (the snapshot)")
	return c
}

func newGatherCmd() *cobra.Command {
	var root string
	c := &cobra.Command{
		Use:   "gather OUT.tar.gz",
		Short: "Capture exactly the files inventory reads, to replay this host anywhere with --root",
		Long: `gather runs inventory and writes every sysfs/procfs file, directory and
symlink it read into a tar.gz laid out as a root tree. Values are copied by
reading them (sysfs cannot be tarred directly). Send the file to anyone:
'rdmalab inventory --root OUT.tar.gz' (or doctor, plan) replays this host.`,
		Example: `  rdmalab gather $(hostname).tar.gz
  rdmalab inventory --root $(hostname).tar.gz`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, n, err := inventory.Gather(root, args[0], time.Now())
			if err != nil {
				// The root or the output path: what the user named.
				return usageErr("gather %v", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d paths from %s (%d GPUs, %d RDMA devices, %d errors)\n", userfile.Name(args[0]), n, userfile.Name(s.Hostname), len(s.GPUs), len(s.RDMADevices), len(s.Errors))
			return nil
		},
	}
	c.Flags().StringVar(&root, "root", "/", "capture this root directory instead of the live host")
	return c
}
