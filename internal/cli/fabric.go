package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/spf13/cobra"
)

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
	f.IntVar(&in.port, "port", 0, "port of --ca to scan from")
	f.DurationVar(&in.timeout, "timeout", 2*time.Minute, "give up on any one diagnostic tool after this long")
	f.DurationVar(&in.interval, "interval", 0, "sample error counters twice this far apart and report rising ones (e.g. 30s)")
}

func (in *fabricInput) load(ctx context.Context) (*fabric.Snapshot, error) {
	if in.snapshot != "" {
		if name, ok := strings.CutPrefix(in.snapshot, "example:"); ok {
			s, err := examples.LoadFabric(name)
			if err != nil {
				return nil, usageErr("%v", err)
			}
			return s, nil
		}
		s, err := fabric.Load(in.snapshot)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return s, nil
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	s, err := fabric.Scan(ctx, fabric.Exec{CA: in.ca, Port: in.port, Timeout: in.timeout}, fabric.ScanOptions{Interval: in.interval})
	if err != nil {
		return nil, usageErr("%v (this needs infiniband-diags and an active InfiniBand port; or use --snapshot)", err)
	}
	return s, nil
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
	var output string
	c := &cobra.Command{
		Use:   "scan",
		Short: "Discover the fabric reachable from this HCA into a snapshot",
		Long: `scan discovers every switch, CA, port and link reachable from this node's HCA
with the standard infiniband-diags tools: ibnetdiscover once (writing its
cache), then iblinkinfo and ibqueryerrors from that cache, sminfo and saquery
SMIR, at the same time. It needs the tools and the umad device (root, or the
rdma group), nothing else. --output json is the fabric snapshot that
'rdmalab fabric check --snapshot' reads anywhere.`,
		Example: `  rdmalab fabric scan
  rdmalab fabric scan --ca mlx5_0 --port 1 --output json > fabric.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			s, err := in.load(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" {
				return s.Encode(cmd.OutOrStdout())
			}
			report.Fabric(cmd.OutOrStdout(), s, nil)
			return nil
		},
	}
	in.register(c)
	c.Flags().StringVarP(&output, "output", "o", "table", "table or json (the snapshot)")
	return c
}

func newFabricCheckCmd() *cobra.Command {
	var in fabricInput
	var output, topology, rate string
	var thresholds []string
	var verbose bool
	c := &cobra.Command{
		Use:   "check",
		Short: "Check a fabric: slow links, down ports, errors, subnet managers, cabling",
		Long: `check judges a fabric (a live scan, or --snapshot FILE from 'fabric scan -o json'):

  links below what both ends support (iblinkinfo's "Could be"), or below
  --expect-rate, naming both ends; error counters over their thresholds
  (0, as ibqueryerrors; --threshold NAME=N, e.g.
  SymbolErrorCounter=10 as infiniband-diags' error_thresholds suggests), saturated
  counters, and counters rising between two samples (--interval); no subnet
  manager, two masters, SMs sharing a priority; linked ports without a LID or
  not Active; and with --topology, the cabling against the plan (an
  ibnetdiscover file, an ibsim netlist or a YAML list of links): planned
  cables that are down, moved or missing, and unplanned ones.
Every check is described in docs/fabric-checks.md.

Exit codes: 0 no failures, 1 failures found, 2 could not run.`,
		Example: `  rdmalab fabric check
  rdmalab fabric check --expect-rate "4X HDR" --topology cabling.yaml
  rdmalab fabric check --interval 30s                 # error counters rising?
  rdmalab fabric check --snapshot example:qdr-lab`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			opt := fabriccheck.Options{Thresholds: map[string]uint64{}}
			if rate != "" {
				r, err := linkrate.ParseRate(rate)
				if err != nil {
					return usageErr("--expect-rate: %v", err)
				}
				opt.ExpectRateGbps = r.Gbps
			}
			for _, t := range thresholds {
				name, v, ok := strings.Cut(t, "=")
				n, err := strconv.ParseUint(v, 10, 64)
				if _, known := fabriccheck.DefaultThresholds[name]; !ok || err != nil || !known {
					return usageErr("--threshold %q: want COUNTER=N with COUNTER one of the PortCounters errors, e.g. SymbolErrorCounter=0", t)
				}
				opt.Thresholds[name] = n
			}
			if topology != "" {
				t, err := fabric.LoadTopology(topology)
				if err != nil {
					return usageErr("--topology: %v", err)
				}
				opt.Plan = t
			}
			s, err := in.load(cmd.Context())
			if err != nil {
				return err
			}
			fs := fabriccheck.Run(s, opt)
			w := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(fs); err != nil {
					return err
				}
			} else {
				report.Fabric(w, s, fs)
				report.Findings(w, fs, verbose)
			}
			if check.Count(fs)[check.Fail] > 0 {
				return errFindings
			}
			return nil
		},
	}
	in.register(c)
	c.Flags().StringVar(&in.snapshot, "snapshot", "", "check a saved fabric snapshot (fabric scan -o json; example:NAME for a built-in one) instead of scanning")
	c.Flags().StringVar(&topology, "topology", "", "intended cabling: an ibnetdiscover output, an ibsim netlist, or a .yaml list of links")
	c.Flags().StringVar(&rate, "expect-rate", "", "rate every link should run at: Gb/s (200) or width and speed (\"4X HDR\")")
	c.Flags().StringArrayVar(&thresholds, "threshold", nil, "override an error counter threshold, COUNTER=N (repeatable)")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "list passed checks too")
	c.Flags().StringVarP(&output, "output", "o", "table", "table or json (the findings)")
	return c
}

func fabricDemo(w io.Writer) error {
	s, err := examples.LoadFabric("qdr-lab")
	if err != nil {
		return err
	}
	fs := fabriccheck.Run(s, fabriccheck.Options{})
	report.Fabric(w, s, fs)
	report.Findings(w, fs, false)
	return nil
}
