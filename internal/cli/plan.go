package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/plan"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/rdmalab/rdmalab/internal/units"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

func newPlanCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "plan",
		Short: "Plan a lab on a host: VMs with GPU+NIC passthrough, pinning, hugepages, libvirt XML",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErr("plan needs a subcommand: rdmalab plan vms (see 'rdmalab plan --help')")
		},
	}
	c.AddCommand(newPlanVMsCmd(), newPlanCheckCmd())
	return c
}

func newPlanCheckCmd() *cobra.Command {
	var in hostInput
	var output format
	c := &cobra.Command{
		Use:   "check DOMAIN.xml...",
		Short: "Judge existing libvirt domains against the host: pinning, NUMA, memory, hugepages, devices",
		Long: `plan check reads libvirt domains (virsh dumpxml output or
/etc/libvirt/qemu/NAME.xml; pasted excerpts are judged on what they show) and
judges each against the host they run on: every vCPU pinned, and to the NUMA
nodes of the VM's passed devices; memory strict on those nodes; hugepage
backing; emulator threads off the CPUs that back vCPUs; no host CPU pinned to
two VMs; every passed device on the host and local to the VM. Domains given
together are judged together.

Exit codes: 0 placed well, 1 findings, 2 a file is not a domain or the host
could not be read, 3 unproven (nothing could be checked).`,
		Example: `  virsh dumpxml vm00 > vm00.xml; virsh dumpxml vm01 > vm01.xml
  rdmalab plan check vm00.xml vm01.xml
  rdmalab plan check --snapshot example:seed000-epyc lab/vm00.xml lab/vm01.xml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			hosts, err := in.load()
			if err != nil {
				return err
			}
			s, err := one(hosts, "plan check")
			if err != nil {
				return err
			}
			fs, err := plan.Check(s, args)
			if err != nil {
				return usageErr("%v", err)
			}
			v := rules.Verdict(rules.PlanCheck, fs)
			w := cmd.OutOrStdout()
			return output.judged(w, envelope.Doctor, v, fs, nil, func() { report.Findings(w, fs, false) })
		},
	}
	in.register(c, false)
	outputFlag(c.Flags(), &output, "table or json")
	return c
}

func newPlanVMsCmd() *cobra.Command {
	var in hostInput
	var output format
	var outDir, memory, pageSize, reserve, policy string
	var groups []string
	var req plan.Request
	c := &cobra.Command{
		Use:   "vms",
		Short: "Split a host's GPUs and NICs into VMs, NUMA-aware, and emit host config and libvirt domains",
		Long: `plan vms splits a host into VMs the way seed 000 does by hand, from the host's
own topology:

  devices   each GPU is paired with its nearest RDMA NIC (same PCIe switch,
            then several switches, host bridge, NUMA node, across); whole
            IOMMU groups, all functions of a device, and everything under a
            bridge that is the only way to reset a device go to one VM
  CPUs      whole cores only, from the NUMA nodes of the VM's devices, after
            the housekeeping cores the host keeps (half at the lowest CPU ids,
            half at the highest); guest vCPUs 2k and 2k+1 are one host core
  memory    hugepages per node, strict numatune, one guest NUMA cell per
            host node with the host's distances

--dir DIR writes: plan.json, kernel-cmdline.txt (grubby and /etc/default/grub
forms), vfio.sh (driverctl, persistent), one libvirt domain XML per VM,
virt-install.sh and CHECKLIST.md. Nothing is applied to the host.

A request that cannot be met is refused with the reason, and the plan for
the nearest request that can be met is shown instead (exit 1).
--policy: single-numa-node (each VM on one node), restricted (each VM in one
socket, so GPUDirect RDMA can work; a GPU↔NIC pair across NUMA nodes inside
the socket is still warned: NCCL uses it only with NCCL_NET_GDR_LEVEL=SYS),
best-effort (plan and warn; default).

Exit codes: 0 planned, 1 refused (the nearest plan is shown), 2 bad input.`,
		Example: `  rdmalab plan vms --snapshot example:seed000-epyc --vms 2
  rdmalab plan vms --snapshot example:hgx-h200 --vms 8 --memory 200G --dir lab/
  rdmalab plan vms --snapshot example:seed000-epyc --vm 06:00.0,41:00.0 --vm 21:00.0,61:00.0 --vcpus 16
  rdmalab plan vms --snapshot example:seed000-epyc --vms 2 --policy restricted --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if req.MemoryBytes, err = sizeFlag("--memory", memory); err != nil {
				return err
			}
			if req.PageSizeBytes, err = sizeFlag("--page-size", pageSize); err != nil {
				return err
			}
			if req.HostReserveBytes, err = sizeFlag("--host-reserve", reserve); err != nil {
				return err
			}
			req.Policy = plan.Policy(policy)
			for _, g := range groups {
				req.Groups = append(req.Groups, strings.Split(g, ","))
			}
			if err := req.Validate(); err != nil {
				return requestErr(err)
			}
			if outDir != "" {
				if err := userfile.OutDir(outDir); err != nil {
					return usageErr("--dir %v", err)
				}
			}
			hosts, err := in.load()
			if err != nil {
				return err
			}
			s, err := one(hosts, "plan vms")
			if err != nil {
				return err
			}
			if err := reserveFits(s, req.HostReserveBytes, reserve); err != nil {
				return err
			}
			if err := plan.CheckGroups(s, req.Groups); err != nil {
				return usageErr("--vm %v", err)
			}
			p, refusal, err := plan.MakeOrNearest(s, req)
			if err != nil && refusal == nil {
				return requestErr(err)
			}
			var files []plan.File
			if outDir != "" && refusal == nil {
				if files, err = plan.Files(p); err != nil {
					return err
				}
				if err := plan.Write(outDir, files); err != nil {
					return usageErr("--dir %v", err)
				}
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				if err := report.PlanJSON(w, p, refusal); err != nil {
					return err
				}
			} else {
				report.PlanResult(w, p, refusal, requestFlags, outDir, files)
			}
			if refusal != nil {
				return errFindings
			}
			return nil
		},
	}
	in.register(c, false)
	f := c.Flags()
	f.IntVar(&req.VMs, "vms", 1, "number of VMs to split the GPU+NIC pairs over")
	f.StringArrayVar(&groups, "vm", nil, "one VM's devices, comma-separated PCI addresses (repeat per VM; overrides --vms)")
	f.IntVar(&req.VCPUs, "vcpus", 0, "vCPUs per VM (default: every free core local to the VM's devices)")
	f.StringVar(&memory, "memory", "", "memory per VM with a unit: 32G (GiB) or 34GB (10^9 bytes); a whole number of pages (default: the hugepages already reserved on its nodes, else half of them)")
	f.IntVar(&req.HousekeepingCores, "housekeeping-cores", 4, "whole cores the host keeps for itself, IRQs and emulator threads")
	f.StringVar(&pageSize, "page-size", "1G", "hugepage size backing guest memory: 1G or 2M")
	f.StringVar(&reserve, "host-reserve", "4G", "memory per NUMA node kept out of hugepages for the host")
	f.StringVar(&policy, "policy", string(plan.BestEffort), "single-numa-node, restricted or best-effort")
	f.StringVar(&req.NamePrefix, "name-prefix", "vm", "VM names are this plus 00, 01, ...")
	f.BoolVar(&req.KeepStorage, "keep-storage", false, "keep storage controllers under a VM's PCIe switches on the host (default: they go with the VM, as seed 004's guide pairs them)")
	f.StringVar(&req.OSInfo, "osinfo", plan.DefaultOSInfo, "the guest OS as osinfo names it, for virt-install --osinfo (osinfo-query os): linux2022 is any recent Linux")
	f.StringVar(&outDir, "dir", "", "write the host config, domain XML, virt-install and checklist into this directory")
	alias(f, "dir", "out")
	outputFlag(f, &output, "table or json")
	return c
}

func sizeFlag(name, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := units.ParseBytes(v)
	if err != nil {
		return 0, usageErr("%s: %v", name, err)
	}
	return n, nil
}

// requestErr names the flag behind a request field.
func requestErr(err error) error {
	var re *plan.RequestError
	if errors.As(err, &re) {
		return usageErr("--%s %s: %s", strings.ReplaceAll(re.Field, "_", "-"), re.Value, re.Reason)
	}
	return usageErr("%v", err)
}

// requestFlags renders a request as the flags that ask for it.
func requestFlags(r plan.Request) string {
	var f []string
	if len(r.Groups) > 0 {
		for _, g := range r.Groups {
			f = append(f, "--vm "+strings.Join(g, ","))
		}
	} else {
		f = append(f, fmt.Sprintf("--vms %d", r.VMs))
	}
	if r.VCPUs > 0 {
		f = append(f, fmt.Sprintf("--vcpus %d", r.VCPUs))
	}
	if r.MemoryBytes > 0 {
		f = append(f, "--memory "+units.FormatBytes(r.MemoryBytes))
	}
	f = append(f, fmt.Sprintf("--housekeeping-cores %d", r.HousekeepingCores), "--policy "+string(r.Policy))
	return strings.Join(f, " ")
}

// planDemo prints the plan for an example host, for the demo.
func planDemo(w io.Writer, s *host.Snapshot, vms int) {
	p, err := plan.Make(s, plan.Request{VMs: vms})
	if err != nil {
		fmt.Fprintf(w, "%v\n", err)
		return
	}
	report.Plan(w, p)
}

// reserveFits refuses a --host-reserve no NUMA node of the host can keep:
// the planner would otherwise suggest a VM of no memory.
func reserveFits(s *host.Snapshot, reserve int64, given string) error {
	var largest int64
	for _, n := range s.NUMANodes {
		if n.GPUMemoryOf == "" {
			largest = max(largest, n.MemTotalBytes)
		}
	}
	if largest > 0 && reserve >= largest {
		return usageErr("--host-reserve %s: want less than %s, the memory of this host's largest NUMA node", given, units.FormatBytes(largest))
	}
	return nil
}
