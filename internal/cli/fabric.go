package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/spf13/cobra"
)

// exitInterrupted is what shells and schedulers expect after SIGINT.
const exitInterrupted = 130

// fabricInput is how fabric commands get a fabric: a live scan through
// this host's HCA, or a saved snapshot.
type fabricInput struct {
	snapshot string
	ca       string
	port     int
	timeout  time.Duration
	interval time.Duration
}

func (in *fabricInput) register(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&in.ca, "ca", "", "local HCA to scan from, e.g. mlx5_0 (default: the tools' first active port)")
	f.IntVar(&in.port, "port", 0, "port of --ca to scan from, 1 or more (default: the tools' choice)")
	f.DurationVar(&in.timeout, "timeout", 2*time.Minute, "give up on any one diagnostic tool after this long (it and its children are killed)")
	f.DurationVar(&in.interval, "interval", 0, "sample error counters twice this far apart and report rising ones (e.g. 30s)")
}

// validate checks the flags once, before any work.
func (in *fabricInput) validate(c *cobra.Command) error {
	f := c.Flags()
	live := []string{"ca", "port", "timeout", "interval"}
	if in.snapshot != "" {
		for _, name := range live {
			if f.Changed(name) {
				return usageErr("--%s reads a live fabric; it does not apply to --fabric %s", name, in.snapshot)
			}
		}
	}
	if f.Changed("port") && in.port < 1 {
		return usageErr("--port %d: a port number is 1 or more", in.port)
	}
	if in.timeout <= 0 {
		return usageErr("--timeout %s: must be positive (e.g. 2m)", in.timeout)
	}
	if f.Changed("interval") && in.interval <= 0 {
		return usageErr("--interval %s: must be positive (e.g. 30s)", in.interval)
	}
	return nil
}

func (in *fabricInput) load(ctx context.Context, stderr io.Writer) (*fabric.Snapshot, error) {
	if in.snapshot != "" {
		s, err := intake.Fabric(in.snapshot)
		if err != nil {
			return nil, usageErr("--fabric %v", err)
		}
		return s, nil
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	o := fabric.ScanOptions{Interval: in.interval}
	if isTerminal(stderr) {
		o.Progress = stderr
	}
	s, err := fabric.Scan(ctx, fabric.Exec{CA: in.ca, Port: in.port, Timeout: in.timeout}, o)
	if errors.Is(err, context.Canceled) {
		return nil, &exitError{code: exitInterrupted, err: errors.New("interrupted")}
	}
	if err != nil {
		return nil, usageErr("%v (this needs infiniband-diags and an active InfiniBand port; or use --snapshot)", err)
	}
	return s, nil
}

// isTerminal reports whether w is a character device (progress is for
// people, not for logs and pipes).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newFabricCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "fabric",
		Short: "Discover and check an InfiniBand fabric from one node",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usageErr("fabric needs a subcommand: scan or check (see 'rdmalab fabric --help')")
		},
	}
	c.AddCommand(newFabricScanCmd(), newFabricCheckCmd())
	return c
}

func newFabricScanCmd() *cobra.Command {
	var in fabricInput
	var output format
	c := &cobra.Command{
		Use:   "scan",
		Short: "Discover the fabric reachable from this HCA into a snapshot",
		Long: `scan discovers every switch, CA, port and link reachable from this node's HCA
with the standard infiniband-diags tools: ibnetdiscover once (writing its
cache), then iblinkinfo and ibqueryerrors from that cache, sminfo and saquery
SMIR, at the same time. It needs the tools and the umad device (root, or the
rdma group), nothing else. Each tool is bounded by --timeout; a tool that
hangs is killed with its children. On a terminal, progress goes to stderr.

The table lists every link, both ends named by description (with GUID and
LID where descriptions collide). --output json is the fabric snapshot
(docs/fabric-snapshot.md) that 'rdmalab fabric check --fabric' reads.`,
		Example: `  rdmalab fabric scan
  rdmalab fabric scan --ca mlx5_0 --port 1 --output json > fabric.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := in.validate(cmd); err != nil {
				return err
			}
			s, err := in.load(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			return output.write(w, envelope.FabricSnapshot, nil, s, func() error {
				report.Fabric(w, s, nil)
				report.FabricLinks(w, s)
				return nil
			})
		},
	}
	in.register(c)
	outputFlag(c.Flags(), &output, "table or json (the snapshot, in the rdmalab envelope)")
	return c
}

// fabricCheckFlags are check's own flags, turned into fabriccheck.Options.
type fabricCheckFlags struct {
	topology, rate string
	thresholds     []string
}

func (fl fabricCheckFlags) options() (fabriccheck.Options, error) {
	opt := fabriccheck.Options{Thresholds: map[string]uint64{}}
	e, err := expect(fl.rate, "")
	if err != nil {
		return opt, err
	}
	opt.Expect = e
	known := fabriccheck.ErrorCounters()
	for _, t := range fl.thresholds {
		name, v, ok := strings.Cut(t, "=")
		n, err := strconv.ParseUint(v, 10, 64)
		if !ok || err != nil || !slices.Contains(known, name) {
			return opt, usageErr("--threshold %q: want COUNTER=N with COUNTER one of %s", t, strings.Join(known, ", "))
		}
		opt.Thresholds[name] = n
	}
	if fl.topology != "" {
		t, err := fabric.LoadTopology(fl.topology)
		if err != nil {
			return opt, usageErr("--topology %v", err)
		}
		opt.Plan = t
	}
	return opt, nil
}

func newFabricCheckCmd() *cobra.Command {
	var in fabricInput
	var fl fabricCheckFlags
	var output format
	var verbose bool
	c := &cobra.Command{
		Use:   "check",
		Short: "Check a fabric: slow links, down ports, errors, subnet managers, cabling",
		Long: `check judges a fabric (a live scan, or --fabric FILE from 'fabric scan
-o json'):

  links below the rate they should run at, one finding per link naming both
  ends by description and GUID: against --expect-rate when given; otherwise
  against what both ends' device models can do (a Switch-IB is 4X EDR, no
  ConnectX ever did 12X) and what the other links of the same class
  (CA↔Switch, Switch↔Switch) run at; iblinkinfo's "Could be" hint (what both
  ends support) fails a link below it even when its peers run alike, unless
  the hints are ibsim's advertise-everything kind (12X on every port).
  Error counters over their thresholds (0, as ibqueryerrors; --threshold
  NAME=N), saturated counters, counters rising between two samples
  (--interval); counters that could not be read are unknown, never "no
  errors". No subnet manager, two masters, SMs sharing a priority; linked
  ports without a LID or not Active; and with --topology, the cabling
  against the plan (an ibnetdiscover file, an ibsim netlist or a YAML list
  of links, docs/cabling.md), matched by GUID.
Every check is described in docs/checks.md (section fabric).

Exit codes: 0 proven healthy, 1 failures found, 2 could not run, 3 unproven
(a link, the subnet manager or a line left unknown), 130 interrupted.`,
		Example: `  rdmalab fabric check
  rdmalab fabric check --expect-rate "4X HDR" --topology cabling.yaml
  rdmalab fabric check --topology ibnetdiscover-at-install.txt
  rdmalab fabric check --interval 30s                 # error counters rising?
  rdmalab fabric check --fabric example:qdr-lab`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := in.validate(cmd); err != nil {
				return err
			}
			opt, err := fl.options()
			if err != nil {
				return err
			}
			s, err := in.load(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fs, err := fabriccheck.Run(s, opt)
			if err != nil {
				return usageErr("--topology %s: %v", fl.topology, err)
			}
			v := rules.Verdict(rules.FabricCheck, fs)
			w := cmd.OutOrStdout()
			return output.judged(w, envelope.FabricCheck, v, fs, s, func() {
				report.Fabric(w, s, fs)
				report.Findings(w, fs, verbose)
			})
		},
	}
	in.register(c)
	c.Flags().StringVar(&in.snapshot, "fabric", "", "check a saved fabric instead of scanning: a fabric snapshot (fabric scan -o json), a saved ibnetdiscover, iblinkinfo or ibqueryerrors output, or example:NAME")
	alias(c.Flags(), "fabric", "snapshot")
	c.Flags().StringVar(&fl.topology, "topology", "", "intended cabling: an ibnetdiscover output, an ibsim netlist, or a .yaml list of links")
	c.Flags().StringVar(&fl.rate, "expect-rate", "", "rate every link should run at: Gb/s (200) or width and speed (\"4X HDR\")")
	c.Flags().StringArrayVar(&fl.thresholds, "threshold", nil, "override an error counter threshold, COUNTER=N (repeatable)")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "list passed checks too")
	outputFlag(c.Flags(), &output, "table or json (findings and the snapshot, in the rdmalab envelope)")
	return c
}

func fabricDemo(w io.Writer) error {
	s, err := examples.LoadFabric("qdr-lab")
	if err != nil {
		return err
	}
	fs, err := fabriccheck.Run(s, fabriccheck.Options{})
	if err != nil {
		return err
	}
	report.Fabric(w, s, fs)
	report.Findings(w, fs, false)
	return nil
}
