// Package cli is rdmalab's command line: flags become options, options call
// a package, results go to report. It holds no state between calls, so tests
// run commands in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes every command keeps, so schedulers and scripts can trust them.
const (
	ExitOK       = 0 // ran; nothing failed
	ExitFindings = 1 // ran; found failures
	ExitUsage    = 2 // could not run: bad flag, unreadable input
	// ExitInterrupted is what shells and schedulers expect after SIGINT
	// (128 + 2); what finished before it is saved.
	ExitInterrupted = 130
)

// exitError carries an exit code with a message for the user.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a user mistake or unreadable input: exit 2, no stack, no usage dump.
func usageErr(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

// errFindings means the command ran and found failures: exit 1.
var errFindings = &exitError{code: ExitFindings, err: errors.New("failures found")}

// Version is set at build time with -ldflags "-X .../cli.Version=v1.2.3".
var Version = "dev"

// Main runs rdmalab with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runCtx(ctx, args, stdout, stderr)
}

// runCtx executes one command line; an interrupt (ctx cancelled) wins over
// whatever the command returned, so scripts see 130.
func runCtx(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if errors.Is(err, errStopRequested) {
		return ExitOK // a service told to stop did what it was asked
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "rdmalab: interrupted")
		return ExitInterrupted
	}
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee != errFindings {
			fmt.Fprintf(stderr, "rdmalab: %v\n", ee.err)
		}
		return ee.code
	}
	// cobra's own errors are flag and argument mistakes.
	fmt.Fprintf(stderr, "rdmalab: %v\nRun 'rdmalab --help' for usage.\n", err)
	return ExitUsage
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "rdmalab",
		Short: "Build, verify and run multi-node RDMA/GPU clusters",
		Long: `rdmalab maps, checks and benchmarks RDMA/GPU hosts the way a careful expert
would by hand with lspci, ibstat, ibv_devinfo, show_gids, nvidia-smi topo -m
and lstopo, and tells you what is wrong and how to fix it.

Every command reads a host in one of three ways:
  (default)          the live host, from /sys and /proc
  --root DIR|FILE    a captured tree (a directory holding sys/, a copy of
                     /sys/class/infiniband, or a tar.gz from 'rdmalab gather')
  --snapshot FILE    a JSON snapshot from 'rdmalab inventory --output json'

Exit codes: 0 ran and nothing failed, 1 ran and found failures, 2 could not run.`,
		Example: `  rdmalab demo                             # everything, on the built-in example hosts
  rdmalab inventory                        # this host
  rdmalab inventory --output json > h.json # a snapshot for later or for another machine
  rdmalab gather host.tar.gz               # capture this host to replay anywhere with --root
  rdmalab plan vms --vms 2 --out lab/      # VMs with GPU+NIC passthrough, pinned, as libvirt XML
  rdmalab fabric check --expect-rate 200   # every InfiniBand link, port, counter and SM`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	// --version only: -v means --verbose in every command that has it.
	root.Flags().Bool("version", false, "print rdmalab's version")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v (see '%s --help')", err, c.CommandPath())
	})
	root.AddCommand(newInventoryCmd(), newDoctorCmd(), newGatherCmd(), newPlanCmd(), newFabricCmd(), newBenchCmd(), newSlurmCmd(), newReportCmd(), newExporterCmd(), newJudgeCmd(), newNCCLCmd(), newDesignCmd(), newDemoCmd())
	addOutputFlags(root, stdout)
	return root
}

// checkOutput validates --output.
func checkOutput(o string) error {
	switch o {
	case "table", "json":
		return nil
	}
	return usageErr("--output %q: want table or json", o)
}

// tempDir makes a scratch directory removed by the returned func.
func tempDir() (string, func(), error) {
	d, err := os.MkdirTemp("", "rdmalab-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}
