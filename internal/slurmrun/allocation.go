package slurmrun

import (
	"context"
	"fmt"
	"os"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/slurm"
)

// InAllocation reports whether this process runs inside a Slurm job
// (salloc, sbatch): SLURM_JOB_NODELIST names its nodes.
func InAllocation() bool { return os.Getenv("SLURM_JOB_NODELIST") != "" }

// Allocation makes a cluster of the job's nodes, launched with srun: the
// node names from SLURM_JOB_NODELIST, each node's data address from its
// NodeAddr (scontrol), or from addrs when it names the node.
func Allocation(ctx context.Context, r Runner, addrs map[string]string) (*cluster.Cluster, error) {
	list := os.Getenv("SLURM_JOB_NODELIST")
	if list == "" {
		return nil, fmt.Errorf("not inside a Slurm allocation (no SLURM_JOB_NODELIST): run under salloc or sbatch, or give --cluster")
	}
	names, err := slurm.ExpandNodeList(list)
	if err != nil {
		return nil, fmt.Errorf("SLURM_JOB_NODELIST: %w", err)
	}
	c := &cluster.Cluster{Launcher: cluster.Launch{Type: "srun"}}
	for _, name := range names {
		addr := addrs[name]
		if addr == "" {
			n, err := ShowNode(ctx, r, name)
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", name, err)
			}
			addr = n.Addr
		}
		if addr == "" {
			return nil, fmt.Errorf("node %s: Slurm knows no NodeAddr; give --data %s=ADDRESS", name, name)
		}
		c.Nodes = append(c.Nodes, cluster.Node{Name: name, Data: addr})
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("the allocation's nodes: %w", err)
	}
	return c, nil
}
