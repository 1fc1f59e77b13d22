package launch

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/procgroup"
)

// SrunJob starts every rank of a job in one srun step of the current
// allocation: the job's nodes by name, RanksPerNode tasks on each, the
// environment and the run identity in srun's own (exported to the tasks),
// every task bounded by timeout(1) on its node. Slurm's MpiDefault (or
// the cluster's launcher options) wires the ranks together; Reap and
// Probe are Srun's.
type SrunJob struct {
	Srun
	// Extra are more srun arguments (--mpi=pmix, from the cluster file's
	// launcher options).
	Extra []string
}

// Command implements JobLauncher.
func (s SrunJob) Command(ctx context.Context, j Job) (*exec.Cmd, error) {
	names := make([]string, len(j.Nodes))
	for i, n := range j.Nodes {
		names[i] = n.Name
	}
	args := []string{"--nodelist=" + strings.Join(names, ","), "--nodes=" + strconv.Itoa(len(j.Nodes)),
		"--ntasks-per-node=" + strconv.Itoa(j.RanksPerNode), "--ntasks=" + strconv.Itoa(len(j.Nodes)*j.RanksPerNode),
		"--overlap", "--quiet", "--kill-on-bad-exit=1", "--export=ALL"}
	args = append(args, s.Extra...)
	args = append(args, "timeout", "-k", "3", strconv.Itoa(deadlineSeconds(j.Deadline)))
	args = append(args, j.Argv...)
	// srun signals the step's tasks and cancels the step on SIGTERM; the
	// group is killed outright if srun lingers.
	cmd := procgroup.Command(ctx, 2*time.Second, 5*time.Second, "srun", args...)
	// Values with commas (NCCL_IB_HCA) cannot ride --export: they go in
	// srun's environment, which --export=ALL hands to every task.
	cmd.Env = append(append(append(os.Environ(), s.Env...), j.Env...), EnvRun+"="+j.Run)
	return cmd, nil
}
