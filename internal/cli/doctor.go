package cli

import (
	"encoding/json"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/spf13/cobra"
)

func newDoctorCmd() *cobra.Command {
	var in hostInput
	var output, linkLayer string
	var rate float64
	var verbose, nhc bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check a host or a fleet: every finding with its evidence and the fix",
		Long: `doctor runs health rules over a host (live, --root) or over saved snapshots
(--snapshot, repeat it for a fleet): port state and rate, link layer, PCIe link
width and speed, RoCE MTU and GIDs, subnet manager, error counters, RDMA and
GPUDirect modules, memlock, IOMMU, hugepages, CPU isolation and governor, NUMA
locality and GPU↔NIC affinity; with several hosts, firmware, rate, MTU, link
layer, driver stack and kernel must match and the odd one out is named; two
snapshots of the same host give error counter rates.
Every check is described in docs/checks.md.

Exit codes: 0 no failures, 1 failures found, 2 could not run.
--nhc prints one line per failure for Slurm's HealthCheckProgram (via NHC).`,
		Example: `  rdmalab doctor
  rdmalab doctor --expect-rate 200 --expect-link-layer InfiniBand
  rdmalab doctor --snapshot node1.json --snapshot node2.json --snapshot node3.json
  rdmalab doctor --snapshot before.json --snapshot after.json   # same host twice: counter rates
  rdmalab doctor --nhc || echo "drain this node"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			switch strings.ToLower(linkLayer) {
			case "", "infiniband", "ethernet":
			default:
				return usageErr("--expect-link-layer %q: want InfiniBand or Ethernet", linkLayer)
			}
			hosts, err := in.load()
			if err != nil {
				return err
			}
			opt := hostcheck.Options{ExpectRateGbps: rate, ExpectLinkLayer: linkLayer}
			if opt.ExpectRateGbps == 0 && len(hosts) > 1 {
				opt.ExpectRateGbps = hostcheck.MajorityRateGbps(hosts)
			}
			var fs []check.Finding
			for _, h := range hostcheck.Latest(hosts) {
				fs = append(fs, hostcheck.Run(h, opt)...)
			}
			fs = append(fs, hostcheck.RunDeltas(hosts)...)
			fs = append(fs, hostcheck.RunFleet(hosts)...)
			check.Sort(fs)
			w := cmd.OutOrStdout()
			switch {
			case nhc:
				report.NHC(w, fs)
			case output == "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					Findings []check.Finding       `json:"findings"`
					Counts   map[check.Outcome]int `json:"counts"`
				}{fs, check.Count(fs)}); err != nil {
					return err
				}
			default:
				report.Findings(w, fs, verbose)
			}
			if check.Count(fs)[check.Fail] > 0 {
				return errFindings
			}
			return nil
		},
	}
	in.register(c, true)
	c.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	c.Flags().Float64Var(&rate, "expect-rate", 0, "rate every active RDMA port should run at, Gb/s (default: the fleet's majority)")
	c.Flags().StringVar(&linkLayer, "expect-link-layer", "", "InfiniBand or Ethernet")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "list passing checks too")
	c.Flags().BoolVar(&nhc, "nhc", false, "one line per failure, for a node health check")
	return c
}
