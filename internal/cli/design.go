package cli

import (
	"errors"

	"github.com/rdmalab/rdmalab/internal/design"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

func newDesignCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "design",
		Short: "Size a cluster: uplink, transfer times, leaf/spine or fat-tree fabric, FRR configs for a routed Clos",
		Long: `design does the arithmetic of seed 001 with every figure's formula and inputs
shown, so you can check it:

  uplink     the uplink sized to the dataset ingest rate, not to the fabric
  transfer   how long a checkpoint or weight file takes over a link
  fabric     leaves, spines, cables, oversubscription and allreduce ceiling,
             with a cabling plan 'fabric check --topology' reads
  frr        one FRR config per switch for a BGP-unnumbered routed Clos

Rates take the one syntax of every rdmalab command: 200, 25GbE, "4X HDR".`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usageErr("design needs a subcommand: uplink, transfer, fabric or frr (see 'rdmalab design --help')")
		},
	}
	c.AddCommand(newDesignUplinkCmd(), newDesignTransferCmd(), newDesignFabricCmd(), newDesignFRRCmd())
	return c
}

// designErr turns a calculator's input error into exit 2.
func designErr(err error) error {
	var ie *design.InputError
	if errors.As(err, &ie) {
		return usageErr("%v", err)
	}
	return err
}

func newDesignUplinkCmd() *cobra.Command {
	var output format
	r := design.UplinkRequest{}
	c := &cobra.Command{
		Use:   "uplink",
		Short: "Size the cluster's uplink to the dataset ingest rate",
		Long: `uplink sizes the link from the cluster to storage and the outside world to
what the GPUs read, not to the internal fabric (seed 001: "spending €40k on a
400 GbE uplink because the internal fabric is 400 GbE: wrong target").

Give a workload --profile (seed 001's table, measured on 4 nodes × 4 GPUs;
--gpus scales it), or --gpus and --per-gpu-ingest in GB/s. The uplink must
carry the burst, and the sustained rate at no more than --max-utilization.
A LAG is capacity per flow: one TCP stream uses one member.

Profiles: llm-pretrain, image-video, finetune, inference.`,
		Example: `  rdmalab design uplink --profile llm-pretrain
  rdmalab design uplink --gpus 16 --per-gpu-ingest 1       # seed 001: 16 GB/s ≈ 128 Gb/s
  rdmalab design uplink --profile image-video --gpus 64 --fabric-rate 400GbE -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := design.PlanUplink(r)
			if err != nil {
				return designErr(err)
			}
			w := cmd.OutOrStdout()
			return output.write(w, envelope.Design, nil, u, func() error { report.DesignUplink(w, u); return nil })
		},
	}
	f := c.Flags()
	f.StringVar(&r.Profile, "profile", "", "workload: llm-pretrain, image-video, finetune or inference")
	f.IntVar(&r.GPUs, "gpus", 0, "GPUs reading data (scales a profile from its 16 GPUs)")
	f.Float64Var(&r.PerGPUIngestGBps, "per-gpu-ingest", 0, "GB/s each GPU reads from storage (instead of --profile)")
	f.StringVar(&r.Burst, "burst", "", "peak ingest rate, e.g. 50 or 100GbE (default: the profile's)")
	f.Float64Var(&r.MaxUtilization, "max-utilization", 0.8, "highest share of the uplink the sustained ingest may use")
	f.StringVar(&r.FabricRate, "fabric-rate", "", "the internal fabric's rate, to compare (e.g. 400GbE)")
	outputFlag(f, &output, "table or json")
	return c
}

func newDesignTransferCmd() *cobra.Command {
	var output format
	o := design.TransferOptions{}
	c := &cobra.Command{
		Use:   "transfer",
		Short: "How long a checkpoint or weight file takes over a link",
		Long: `transfer works out how long moving --size takes at --rate: at line rate, and
at the payload share the protocol headers leave (TCP over Ethernet at --mtu, or
InfiniBand for an IB rate), or at --efficiency if you give it.

One flow uses one link: with --links 4 (NICs or LAG members) a single stream
still moves at one link's rate; open --streams 4 to use all four.

Sizes need a unit: GB and TB count in powers of 10 (as storage does), GiB and
TiB in powers of 2.`,
		Example: `  rdmalab design transfer --size 280GB --rate 25GbE        # seed 001: ~90 s
  rdmalab design transfer --size 140GB --rate 100GbE       # a 70B weight file: ~11 s
  rdmalab design transfer --size 1TB --rate 100GbE --links 4 --streams 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := design.PlanTransfer(o)
			if err != nil {
				return designErr(err)
			}
			w := cmd.OutOrStdout()
			return output.write(w, envelope.Design, nil, t, func() error { report.DesignTransfer(w, t); return nil })
		},
	}
	f := c.Flags()
	f.StringVar(&o.Size, "size", "", "how much data, with a unit: 280GB, 1.5TiB (required)")
	f.StringVar(&o.Rate, "rate", "", "link rate: 25GbE, 100, \"4X HDR\" (required)")
	f.IntVar(&o.Links, "links", 1, "links the transfer may use (NICs or LAG members)")
	f.IntVar(&o.Streams, "streams", 1, "parallel streams (flows) the transfer opens")
	f.Float64Var(&o.Efficiency, "efficiency", 0, "payload share of the line rate, 0 < e ≤ 1 (default: from the headers at --mtu)")
	f.IntVar(&o.MTUBytes, "mtu", 0, "MTU in bytes (default 9000 on Ethernet, 4096 on InfiniBand)")
	outputFlag(f, &output, "table or json")
	c.MarkFlagRequired("size")
	c.MarkFlagRequired("rate")
	return c
}

func newDesignFabricCmd() *cobra.Command {
	var output format
	var planFile string
	r := design.FabricRequest{}
	c := &cobra.Command{
		Use:   "fabric",
		Short: "Size a leaf/spine or InfiniBand fat-tree fabric and write its cabling plan",
		Long: `fabric sizes the data fabric for --endpoints NIC ports (or --nodes ×
--nics-per-node rail NICs) on --radix-port switches: whether one switch
suffices, else a two-tier leaf/spine (k-port switches: up to k²/2 hosts on k
leaves and k/2 spines non-blocking) or a three-tier fat tree (up to k³/4);
cables, oversubscription, and the inter-node allreduce busbw to expect (line
rate / 8 per NIC, in GB/s, seed 001).

The layer follows --rate ("4X NDR" is InfiniBand, 400GbE is Ethernet) unless
--link-layer says. --plan FILE.yaml writes the cabling plan (node descriptions
"node0001 mlx5_0", switches leaf01, spine01, core01) in the format
'rdmalab fabric check --topology' reads.`,
		Example: `  rdmalab design fabric --endpoints 2048 --radix 64 --rate "4X NDR"
  rdmalab design fabric --nodes 32 --gpus-per-node 8 --nics-per-node 8 --radix 64 --rate 400GbE
  rdmalab design fabric --nodes 4 --radix 32 --rate 200GbE       # one switch suffices
  rdmalab design fabric --endpoints 512 --radix 40 --rate "4X HDR" --plan cabling.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fab, err := design.PlanFabric(r)
			if err != nil {
				return designErr(err)
			}
			if planFile != "" {
				b, err := fab.CablingYAML()
				if err != nil {
					return err
				}
				if err := userfile.WriteFile(planFile, b, 0o644); err != nil {
					return usageErr("--plan %v", err)
				}
			}
			w := cmd.OutOrStdout()
			return output.write(w, envelope.Design, nil, fab, func() error { report.DesignFabric(w, fab); return nil })
		},
	}
	f := c.Flags()
	// Endpoints are NIC ports, not hosts: --hosts said hosts and meant ports.
	f.IntVar(&r.Hosts, "endpoints", 0, "fabric endpoints: NIC ports to connect (or --nodes × --nics-per-node)")
	alias(f, "endpoints", "hosts")
	f.IntVar(&r.Nodes, "nodes", 0, "nodes (instead of --endpoints)")
	f.IntVar(&r.NICsPerNode, "nics-per-node", 1, "rail NICs per node")
	f.IntVar(&r.GPUsPerNode, "gpus-per-node", 0, "GPUs per node (for the notes)")
	f.IntVar(&r.Radix, "radix", 64, "switch ports")
	f.StringVar(&r.Rate, "rate", "400", "port rate: 400GbE, \"4X NDR\", 200")
	f.StringVar(&r.Layer, "link-layer", "", "InfiniBand or RoCE (default: from --rate)")
	alias(f, "link-layer", "layer")
	f.Float64Var(&r.Oversubscription, "oversubscription", 1, "leaf host:uplink port ratio (1 = non-blocking)")
	f.StringVar(&planFile, "plan", "", "write the cabling plan (YAML) to this file")
	outputFlag(f, &output, "table or json")
	return c
}

func newDesignFRRCmd() *cobra.Command {
	var output format
	var out string
	var spineASN, leafASN uint32
	r := design.FRRRequest{}
	c := &cobra.Command{
		Use:   "frr",
		Short: "Write one FRR config per switch for a BGP-unnumbered routed Clos",
		Long: `frr writes leaf and spine configurations for FRRouting: a routed Clos with BGP
unnumbered (RFC 7938 pattern): every leaf its own private AS, the spines one
shared AS (so valley paths die in BGP's loop check), router ids on loopbacks,
a peer group with 'remote-as external', 'neighbor PORT interface' on every
fabric port (IPv6 link-local peering, no per-link addresses), maximum-paths =
spines on the leaves (ECMP), and each leaf's hosts' network advertised.

Leaf port swpJ faces spine J; spine port swpI faces leaf I. Files are
NAME.conf in --dir (made if missing, checked writable before anything else);
nothing is written anywhere else. Check them with 'vtysh -C -f FILE'.`,
		Example: `  rdmalab design frr --spines 2 --leaves 4 --dir frr/
  rdmalab design frr --spines 4 --leaves 16 --loopbacks 10.255.0.0/24 --leaf-networks 10.10.0.0/16 --dir frr/
  rdmalab design frr --spines 8 --leaves 32 --port-prefix eth --host-interface br0 --dir frr/ -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErr("%smissing --dir: the directory to write NAME.conf files into (see '%s --help')", who(cmd), cmd.CommandPath())
			}
			if err := userfile.OutDir(out); err != nil {
				return usageErr("--dir %v", err)
			}
			r.SpineASN, r.LeafASNBase = spineASN, leafASN
			clos, err := design.PlanFRR(r)
			if err != nil {
				return designErr(err)
			}
			if err := design.WriteFiles(out, clos.Files); err != nil {
				return usageErr("--dir: %v", err)
			}
			w := cmd.OutOrStdout()
			return output.write(w, envelope.Design, nil, clos, func() error { report.DesignFRR(w, clos, out); return nil })
		},
	}
	f := c.Flags()
	f.IntVar(&r.Spines, "spines", 2, "spine switches")
	f.IntVar(&r.Leaves, "leaves", 4, "leaf switches")
	f.Uint32Var(&spineASN, "spine-asn", 65000, "the spines' shared private ASN")
	f.Uint32Var(&leafASN, "leaf-asn", 65001, "first leaf's private ASN; leaf i gets this + i")
	f.StringVar(&r.Loopbacks, "loopbacks", "10.0.0.0/24", "network the router ids (loopbacks) come from: spines first, then leaves")
	f.StringVar(&r.LeafNetworks, "leaf-networks", "10.1.0.0/16", "network cut into one hosts' network per leaf")
	f.IntVar(&r.LeafPrefixLen, "leaf-prefix-len", 24, "prefix length of each leaf's hosts' network")
	f.StringVar(&r.SpineName, "spine-name", "spine", "spine name prefix (spine01, spine02, …)")
	f.StringVar(&r.LeafName, "leaf-name", "leaf", "leaf name prefix (leaf01, leaf02, …)")
	f.StringVar(&r.PortPrefix, "port-prefix", "swp", "fabric port name prefix (swp1, swp2, …)")
	f.StringVar(&r.HostInterface, "host-interface", "hosts", "the leaf's host-facing interface (bridge or bond)")
	f.StringVar(&out, "dir", "", "directory to write NAME.conf files into (required)")
	alias(f, "dir", "out")
	outputFlag(f, &output, "table or json")
	return c
}
