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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/internal/buildinfo"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

// Exit codes every command keeps, so schedulers and scripts can trust them.
const (
	ExitOK       = 0 // ran; nothing failed
	ExitFindings = 1 // ran; found failures
	ExitUsage    = 2 // could not run: bad flag, unreadable input
	// ExitUnproven: ran, found no failure, but could not answer its
	// question (Nagios UNKNOWN): never read as healthy.
	ExitUnproven = 3
	// ExitInterrupted is what shells and schedulers expect after SIGINT
	// (128 + 2); what finished before it is saved.
	ExitInterrupted = 130
	// ExitTerminated is 128 + SIGTERM, what systemd and Slurm expect of a
	// process they asked to stop.
	ExitTerminated = 143
)

// stopGrace is how long a command has, after a signal, to stop its
// children and save what it did before Main ends the process anyway: a
// read of a pipe or a terminal cannot be cancelled, and a command must
// end within a second of a signal whatever it is blocked on.
const stopGrace = 600 * time.Millisecond

// stopNote is what a command asks Main to say if the process is ended
// before the command can say it itself (stopGrace ran out, as it can on a
// loaded machine, or a second signal came): where its work is saved and
// how to go on. Set once the command's results log is open; every record
// in it is synced, so what it says holds however the process ends.
var stopNote atomic.Pointer[string]

// sayOnStop sets the stop note and returns it, for the command's own
// interrupted message.
func sayOnStop(format string, a ...any) string {
	msg := fmt.Sprintf(format, a...)
	stopNote.Store(&msg)
	return msg
}

// signalled is the cause of a context cancelled by a signal.
type signalled struct{ sig os.Signal }

func (s *signalled) Error() string { return "stopped by " + s.sig.String() }

// interruptCode is the exit code for the signal that cancelled ctx.
func interruptCode(ctx context.Context) int {
	var s *signalled
	if errors.As(context.Cause(ctx), &s) && s.sig == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}

// stopIsSuccess marks a command (a service) for which a requested stop is
// its normal end: it exits 0 on SIGINT/SIGTERM.
const stopIsSuccess = "rdmalab/stop-is-success"

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

// errUnproven means the command ran, found no failure, and could not
// answer its question: exit 3. Its verdict line has said why.
var errUnproven = &exitError{code: ExitUnproven, err: errors.New("unproven")}

// verdictErr is the exit a verdict maps to: healthy 0, failed 1, unproven 3.
func verdictErr(v check.Verdict) error {
	switch v.Status {
	case check.Failing:
		return errFindings
	case check.Unproven:
		return errUnproven
	}
	return nil
}

// Main runs rdmalab with args and returns the process exit code.
//
// The first SIGINT or SIGTERM cancels the command's context; commands stop
// their children (process groups) and save what they did. One still
// running stopGrace later, or any second signal, ends the process; either
// way nothing it started outlives it (adoptOrphans).
func Main(args []string, stdout, stderr io.Writer) int {
	killAll := func() {}
	if !isService(args) {
		killAll = adoptOrphans()
	}
	defer killAll()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopNote.Store(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		cancel(&signalled{sig})
		select {
		case <-done:
			return
		case <-time.After(stopGrace):
		case <-sigs:
		}
		if n := stopNote.Load(); n != nil {
			fmt.Fprintf(stderr, "rdmalab: interrupted; %s\n", userfile.Escape(*n))
		} else {
			fmt.Fprintln(stderr, "rdmalab: interrupted")
		}
		killAll()
		os.Exit(interruptCode(ctx))
	}()
	return runCtx(ctx, args, stdout, stderr)
}

// runCtx executes one command line; an interrupt (ctx cancelled) wins over
// whatever the command returned, so scripts see 130 (143 for SIGTERM). A
// command's own message for it (where its work was saved) is printed.
func runCtx(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	wrapHelp(root, helpWidth(args))
	root.SetArgs(args)
	ran, err := root.ExecuteContextC(ctx)
	if err != nil {
		if e := plainArgsError(ran, err); e != nil {
			err = e
		}
	}
	if ctx.Err() != nil {
		if ran != nil && ran.Annotations[stopIsSuccess] != "" && err == nil {
			return ExitOK
		}
		var ee *exitError
		if errors.As(err, &ee) && ee.code == ExitInterrupted {
			fmt.Fprintf(stderr, "rdmalab: %s\n", userfile.Escape(ee.err.Error()))
		} else {
			fmt.Fprintln(stderr, "rdmalab: interrupted")
		}
		return interruptCode(ctx)
	}
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee != errFindings && ee != errUnproven {
			fmt.Fprintf(stderr, "rdmalab: %s\n", userfile.Escape(ee.err.Error()))
		}
		return ee.code
	}
	// cobra's own errors are flag and argument mistakes.
	fmt.Fprintf(stderr, "rdmalab: %s\nRun 'rdmalab --help' for usage.\n", userfile.Escape(err.Error()))
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

Exit codes: 0 proven healthy, 1 a failure found, 2 could not run (bad flag,
unreadable input), 3 unproven (no failure, but the run could not answer its
question: the verdict line names what would), 130/143 interrupted.`,
		Example: `  rdmalab demo                             # everything, on the built-in example hosts
  rdmalab inventory                        # this host
  rdmalab inventory --output json > h.json # a snapshot for later or for another machine
  rdmalab gather host.tar.gz               # capture this host to replay anywhere with --root
  rdmalab plan vms --vms 2 --dir lab/      # VMs with GPU+NIC passthrough, pinned, as libvirt XML
  rdmalab fabric check --expect-rate 200   # every InfiniBand link, port, counter and SM`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// --version only: -v means --verbose in every command that has it.
	root.Flags().Bool("version", false, "print rdmalab's version")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(plainFlagError)
	root.AddCommand(newInventoryCmd(), newDoctorCmd(), newGatherCmd(), newPlanCmd(), newFabricCmd(), newBenchCmd(), newSlurmCmd(), newReportCmd(), newExporterCmd(), newJudgeCmd(), newNCCLCmd(), newDesignCmd(), newDemoCmd(), newCompareCmd(), newExplainCmd(), newVersionCmd(), newReleaseCmd())
	addOutputFlags(root, stdout)
	guardGroups(root)
	completeValues(root)
	return root
}

// tempDir makes a scratch directory removed by the returned func.
func tempDir() (string, func(), error) {
	d, err := os.MkdirTemp("", "rdmalab-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}
