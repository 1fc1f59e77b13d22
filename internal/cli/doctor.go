package cli

import (
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/spf13/cobra"
)

func newDoctorCmd() *cobra.Command {
	var in hostInput
	var output format
	var rate, linkLayer, profile, ipoib string
	var ports, kernels []string
	var verbose, nhc bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check a host or a fleet: every finding with its evidence and the fix",
		Long: `doctor runs health rules over a host (live, --root) or over saved snapshots
(--snapshot, repeat it for a fleet): RDMA devices present for every RDMA-capable
NIC, port state and rate, link layer, PCIe link width and speed, RoCE MTU and
GIDs, subnet manager, error counters, RDMA and GPUDirect modules, memlock,
IOMMU, hugepages, CPU isolation and governor, NUMA locality and GPU↔NIC
affinity; with three or more hosts, firmware (per NIC model), rate, MTU, link
layer, driver stack and kernel must match and the odd one out is named
against a real majority; two snapshots of the same host give error counter
rates. Every check, what it needs to be sure and what makes it unknown, is in
docs/checks.md.

A port that is down and shows no sign of use (no data since boot, no
address, not in --expect-ports) is reported as unused, not failed.

Exit codes: 0 proven healthy, 1 failures found, 2 could not run, 3 unproven
(nothing failed, but a port's state or rate, the RDMA device or the SM could
not be judged: the verdict line names the flag or input that would answer).
--nhc prints one line per failure for Slurm's HealthCheckProgram (via NHC);
it also means RDMA is expected on the node, so a node without any RDMA device
fails.`,
		Example: `  rdmalab doctor
  rdmalab doctor --expect-rate 200 --expect-link-layer InfiniBand
  rdmalab doctor --expect-rate "4X HDR" --expect-ports mlx5_0/1,mlx5_1/1
  rdmalab doctor --snapshot node1.json --snapshot node2.json --snapshot node3.json
  rdmalab doctor --snapshot before.json --snapshot after.json   # same host twice: counter rates
  rdmalab doctor --nhc --expect-rate 200 || echo "drain this node"
  rdmalab doctor --profile vm-host   # a hypervisor after rdmalab plan vms and vfio.sh`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("expect-rate") && rate == "" {
				return usageErr("--expect-rate: empty; want Gb/s (200), Ethernet (25GbE) or width and speed (4X HDR)")
			}
			opt, err := expectFlags(rate, linkLayer)
			if err != nil {
				return err
			}
			if err := hostcheck.CheckPorts(ports); err != nil {
				return usageErr("--expect-ports %v", err)
			}
			opt.ExpectPorts = ports
			opt.RequireRDMA = nhc
			switch profile {
			case "bare-metal":
			case hostcheck.VMHost:
				opt.Profile = profile
			default:
				return usageErr("--profile %s: want bare-metal or vm-host", profile)
			}
			switch ipoib {
			case "", "connected", "datagram":
				opt.ExpectIPoIB = ipoib
			default:
				return usageErr("--expect-ipoib %q: want connected or datagram", ipoib)
			}
			opt.AllowKernels = kernels
			hosts, err := in.load()
			if err != nil {
				return err
			}
			fs := hostcheck.Doctor(hosts, opt)
			v := rules.Verdict(rules.Doctor, fs)
			w := cmd.OutOrStdout()
			if nhc {
				report.NHC(w, fs, v)
				return verdictErr(v)
			}
			return output.judged(w, envelope.Doctor, v, fs, nil, func() { report.Findings(w, fs, verbose) })
		},
	}
	in.register(c, true)
	outputFlag(c.Flags(), &output, "table or json")
	c.Flags().StringVar(&rate, "expect-rate", "", `rate every active RDMA port should run at: Gb/s ("200"), "4X HDR" or "25GbE" (default: the fleet's majority, with 3 or more hosts)`)
	c.Flags().StringVar(&linkLayer, "expect-link-layer", "", "InfiniBand (IB) or RoCE (Ethernet)")
	c.Flags().StringSliceVar(&ports, "expect-ports", nil, "ports that must be up, DEV/PORT or DEV (every port of DEV), comma-separated; other down ports are unused")
	c.Flags().StringVar(&ipoib, "expect-ipoib", "", "IPoIB mode every IPoIB interface must use: connected or datagram (also requires ib_ipoib)")
	c.Flags().StringSliceVar(&kernels, "allow-kernels", nil, "kernel releases the fleet may mix on purpose, glob patterns (e.g. '*.el9*,*.el10*')")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "list passed checks too")
	c.Flags().StringVar(&profile, "profile", "bare-metal", "bare-metal, or vm-host for a hypervisor passing GPUs and NICs to VMs (vfio-pci, no NVIDIA driver, whole IOMMU groups, ACS kept, hugepages per node)")
	c.Flags().BoolVar(&nhc, "nhc", false, "one line per failure, for a node health check (RDMA is then required)")
	return c
}
