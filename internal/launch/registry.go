package launch

import (
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
)

// Setup is what a launcher needs beyond the cluster file: where ssh keeps
// its control connections, how long a connection may take, and mpirun's
// or srun's extra arguments for jobs.
type Setup struct {
	ControlDir     string
	ConnectTimeout time.Duration
	JobArgs        []string
	// SrunEnv is added to srun's environment (SLURM_CONF in tests).
	SrunEnv []string
}

// For is the one choice of launcher from the cluster file's launcher
// type, one line per kind; bench and nccl run both ask it.
func For(c *cluster.Cluster, s Setup) Launcher {
	switch c.Launcher.Type {
	case "local":
		return Local{}
	case "srun":
		return NewSrun(s.SrunEnv)
	}
	return &SSH{Options: c.Launcher.Options, KnownHosts: c.Launcher.KnownHosts, ControlDir: s.ControlDir, ConnectTimeout: s.ConnectTimeout}
}

// JobFor is the job launcher for the cluster file's launcher type: ssh
// starts every rank through mpirun (ssh as its agent), srun in one step
// of the allocation; local has no job launcher (an MPI job spans nodes).
// l is For's launcher of the same cluster (it probes and reaps).
func JobFor(c *cluster.Cluster, l Launcher, s Setup) (JobLauncher, error) {
	switch v := l.(type) {
	case *SSH:
		return NewMPIRun(c, v, s.JobArgs)
	case Srun:
		return SrunJob{Srun: v, Extra: s.JobArgs}, nil
	}
	return nil, fmt.Errorf("launcher %q starts no MPI job: use ssh (mpirun) or srun", c.Launcher.Type)
}
