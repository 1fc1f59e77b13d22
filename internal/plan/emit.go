package plan

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// File is one output of a plan.
type File struct {
	Name    string
	Content string
	Mode    os.FileMode
}

// Files renders everything a plan emits besides its table: the kernel
// command line, VFIO binding, one domain XML per VM, the virt-install
// equivalent, the checklist and the plan itself as JSON.
func Files(p *Plan) ([]File, error) {
	var fs []File
	js, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	fs = append(fs,
		File{"plan.json", string(js) + "\n", 0o644},
		File{"kernel-cmdline.txt", KernelCmdline(p), 0o644},
		File{"vfio.sh", VFIOScript(p), 0o755},
	)
	for _, vm := range p.VMs {
		x, err := DomainXML(p, vm)
		if err != nil {
			return nil, err
		}
		fs = append(fs, File{vm.Name + ".xml", x, 0o644})
		topo, err := NCCLTopology(p, vm)
		if err != nil {
			return nil, err
		}
		fs = append(fs, File{vm.Name + "-nccl-topo.xml", topo, 0o644})
	}
	fs = append(fs, File{"virt-install.sh", VirtInstall(p), 0o755}, File{"CHECKLIST.md", Checklist(p), 0o644})
	return fs, nil
}

// Write writes files into dir (made by userfile.MakeOutDir) and nowhere
// else, each through userfile.WriteIn: a fresh temporary file under a
// random name, renamed over its final name, so an interrupted run never
// leaves a half-written file and nothing planted in dir is written through.
func Write(dir string, files []File) error {
	if err := userfile.MakeOutDir(dir); err != nil {
		return err
	}
	for _, f := range files {
		if err := userfile.WriteIn(dir, f.Name, []byte(f.Content), f.Mode); err != nil {
			return err
		}
	}
	return nil
}

// KernelCmdline gives the arguments in grubby's form (RHEL family) and
// /etc/default/grub's (Debian family).
func KernelCmdline(p *Plan) string {
	args := strings.Join(p.KernelArgs, " ")
	var b strings.Builder
	fmt.Fprintf(&b, "# Kernel command line for %s (rdmalab plan). Apply one form, then reboot.\n\n", p.Host)
	fmt.Fprintf(&b, "# RHEL, Rocky, Alma, CentOS Stream, Fedora:\ngrubby --update-kernel=ALL --args=%q\n\n", args)
	fmt.Fprintf(&b, "# Debian, Ubuntu: append to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, then update-grub\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT %s\"\n", args)
	return b.String()
}

// VFIOScript binds every planned device to vfio-pci in a way that survives
// reboots (seed 000's manual binding "needs to run every boot"). When GPUs
// go to VMs, the host's NVIDIA driver stack is unloaded first: a GPU held
// by nvidia cannot be rebound (seed 000 removes the modules by hand; seed
// 004 says not to install the driver on the hypervisor at all).
func VFIOScript(p *Plan) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Bind the planned devices to vfio-pci, persistently (driverctl keeps the override across reboots).\nset -eu\n")
	if planHasGPUs(p) {
		b.WriteString("\n# The host's NVIDIA driver must let go of the GPUs first (users of the modules stopped, then\n" +
			"# the modules removed, dependants first). Better still: do not install the driver on the host.\n" +
			"systemctl stop nvidia-persistenced.service nvidia-fabricmanager.service nvidia-dcgm.service 2>/dev/null || true\n" +
			"for m in nvidia_drm nvidia_modeset nvidia_uvm nvidia_peermem nvidia; do\n" +
			"  if [ -d /sys/module/$m ]; then modprobe -r \"$m\"; fi\n" +
			"done\n")
	}
	b.WriteString("modprobe vfio-pci\n")
	for _, vm := range p.VMs {
		fmt.Fprintf(&b, "\n# %s\n", vm.Name)
		for _, d := range vm.Devices {
			fmt.Fprintf(&b, "driverctl set-override %s vfio-pci   # %s %s", d.Address, d.Role, d.Name)
			if d.Driver != "" && d.Driver != "vfio-pci" {
				fmt.Fprintf(&b, ", now on %s", d.Driver)
			}
			if d.Why != "" {
				fmt.Fprintf(&b, "; comes along: %s", d.Why)
			}
			b.WriteString("\n")
		}
	}
	if f := p.Fabric; f != nil && f.Mode == "shared-nvswitch" {
		fmt.Fprintf(&b, "\n# Fabric Manager service VM (shared NVSwitch mode): the %s's NVSwitches\n", f.Board)
		for _, n := range f.NVSwitches {
			fmt.Fprintf(&b, "driverctl set-override %s vfio-pci   # nvswitch\n", n)
		}
	}
	b.WriteString("\n# Without driverctl: 'options vfio-pci ids=VENDOR:DEVICE,...' in /etc/modprobe.d/vfio.conf plus\n" +
		"# 'softdep DRIVER pre: vfio-pci' catches every device with those ids, including ones the host keeps.\n")
	return b.String()
}

func planHasGPUs(p *Plan) bool {
	for _, vm := range p.VMs {
		if countRole(vm, "gpu") > 0 {
			return true
		}
	}
	return false
}

// DiskPath is where each VM's boot disk is expected; the checklist says
// how to create it and virt-install imports it.
func DiskPath(vm VM) string { return "/var/lib/libvirt/images/" + vm.Name + ".qcow2" }

// VirtInstall is the virt-install equivalent of each domain. The XML files
// are the reference; `virsh define vmNN.xml` applies them directly.
func VirtInstall(p *Plan) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# virt-install equivalents of the planned domains (or: virsh define vmNN.xml).\nset -eu\n")
	for _, vm := range p.VMs {
		var cpu, tune, numa []string
		cpu = append(cpu, "host-passthrough")
		numa = append(numa, nodeset(vm.Cells), "mode=strict")
		for _, c := range vm.Cells {
			cpu = append(cpu, fmt.Sprintf("cell%d.id=%d,cell%d.cpus=%s,cell%d.memory=%d", c.ID, c.ID, c.ID, c.VCPUs, c.ID, c.MemoryBytes>>10))
			numa = append(numa, fmt.Sprintf("memnode%d.cellid=%d,memnode%d.mode=strict,memnode%d.nodeset=%d", c.ID, c.ID, c.ID, c.ID, c.HostNode))
		}
		for i, cpuID := range vm.Pins {
			tune = append(tune, fmt.Sprintf("vcpupin%d.vcpu=%d,vcpupin%d.cpuset=%d", i, i, i, cpuID))
		}
		// virt-install 4.1 takes iothreadpin under --cputune only.
		tune = append(tune, fmt.Sprintf("emulatorpin.cpuset=\"%s\"", vm.EmulatorCPUs),
			fmt.Sprintf("iothreadpin0.iothread=1,iothreadpin0.cpuset=\"%s\"", vm.EmulatorCPUs))
		fmt.Fprintf(&b, "\n# %s\nvirt-install \\\n", vm.Name)
		lines := [][2]string{
			{"--name", vm.Name},
			{"--memory", fmt.Sprint(vm.MemoryBytes >> 20)},
			{"--vcpus", fmt.Sprintf("%d,sockets=%d,cores=%d,threads=%d", vm.VCPUs, vm.Sockets, vm.CoresPerSkt, vm.Threads)},
			{"--cpu", strings.Join(cpu, ",")},
			{"--cputune", strings.Join(tune, ",")},
			{"--numatune", strings.Join(numa, ",")},
			{"--memorybacking", fmt.Sprintf("hugepages.page0.size=%d,hugepages.page0.unit=KiB,locked=on", p.Request.PageSizeBytes>>10)},
			{"--iothreads", "1"},
			{"--machine", "q35"},
			{"--boot", "uefi"},
			{"--memballoon", "none"},
			{"--osinfo", p.Request.OSInfo},
			{"--disk", "path=" + DiskPath(vm) + ",format=qcow2,bus=virtio"},
			{"--network", "network=default"},
		}
		for _, d := range vm.Devices {
			lines = append(lines, [2]string{"--host-device", d.Address.String()})
		}
		lines = append(lines, [2]string{"--import", ""}, [2]string{"--noautoconsole", ""})
		for i, l := range lines {
			end := " \\\n"
			if i == len(lines)-1 {
				end = "\n"
			}
			if l[1] == "" {
				fmt.Fprintf(&b, "  %s%s", l[0], end)
			} else {
				fmt.Fprintf(&b, "  %s '%s'%s", l[0], l[1], end)
			}
		}
	}
	return b.String()
}

// Checklist is the order in which to apply the plan and what to verify.
func Checklist(p *Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Applying the plan for %s\n\n", p.Host)
	b.WriteString("1. BIOS: VT-d/AMD-Vi (IOMMU) on, SR-IOV and Above 4G Decoding on, Resizable BAR as the GPU vendor says.\n")
	b.WriteString("2. Kernel command line: run one form from `kernel-cmdline.txt`, reboot.\n")
	fmt.Fprintf(&b, "3. Verify: `cat /sys/devices/system/cpu/isolated` prints `%s`;", p.IsolatedCPUs)
	for _, np := range p.HugePages {
		fmt.Fprintf(&b, " node %d has %d in `/sys/devices/system/node/node%d/hugepages/hugepages-%s/nr_hugepages`;", np.Node, np.Pages, np.Node, hugeDir(np.PageSizeBytes))
	}
	b.WriteString(" `rdmalab doctor` passes.\n")
	b.WriteString("4. VFIO: `sh vfio.sh` (unloads the host's GPU driver, then driverctl), then `lspci -nnk` shows `vfio-pci` on every planned device.\n")
	b.WriteString("5. Disks: each VM boots a qcow2 image the plan does not make; from a cloud image of the guest OS (")
	fmt.Fprintf(&b, "`--osinfo %s`):\n", p.Request.OSInfo)
	for _, vm := range p.VMs {
		fmt.Fprintf(&b, "   `qemu-img create -f qcow2 -F qcow2 -b /var/lib/libvirt/images/CLOUD-IMAGE.qcow2 %s 100G`\n", DiskPath(vm))
	}
	b.WriteString("6. Domains: `virsh define vmNN.xml` for each VM (or `sh virt-install.sh`), then `virsh start vmNN`.\n")
	fabricSteps(&b, p)
	b.WriteString("7. Verify pinning: `virsh vcpupin vmNN`, `virsh emulatorpin vmNN`, `virsh numatune vmNN` match `plan.json`.\n")
	b.WriteString("8. `cpupower frequency-set -g performance` on the host.\n")
	b.WriteString("9. In each guest: copy `vmNN-nccl-topo.xml` to /etc/nccl-topo.xml and `export NCCL_TOPO_FILE=/etc/nccl-topo.xml`\n" +
		"   (the guest's flat PCI tree hides which NIC is near which GPU); `nvidia-smi topo -m` and `ibv_devinfo`, then `rdmalab bench` between the VMs.\n")
	if len(p.Notes) > 0 {
		b.WriteString("\n## Warnings\n\n")
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "- %s\n", n.Message)
		}
	}
	return b.String()
}

// fabricSteps are the Fabric Manager steps of an NVSwitch baseboard: in
// full passthrough the guest runs Fabric Manager; in shared NVSwitch mode
// a service VM holding the NVSwitches runs it with FABRIC_MODE=1, and each
// VM's partition is activated before the VM starts and deactivated after
// it stops.
func fabricSteps(b *strings.Builder, p *Plan) {
	f := p.Fabric
	if f == nil {
		return
	}
	if f.Mode == "full-passthrough" {
		fmt.Fprintf(b, "   NVSwitch (%s, full passthrough): the VM holds every GPU and the NVSwitches %s; in the guest install\n"+
			"   the NVIDIA driver and nvidia-fabricmanager of the same version, `systemctl enable --now nvidia-fabricmanager`,\n"+
			"   and wait for its journal to say all NVSwitches are configured before running CUDA.\n", f.Board, host.JoinPCI(f.NVSwitches, ", "))
		return
	}
	fmt.Fprintf(b, "   NVSwitch (%s, shared NVSwitch mode): NVLink works only inside a Fabric Manager partition.\n", f.Board)
	fmt.Fprintf(b, "   a. A service VM (a few vCPUs and GiB, on the housekeeping cores) gets the NVSwitches %s (bound by vfio.sh).\n", host.JoinPCI(f.NVSwitches, ", "))
	b.WriteString("   b. In it: install nvidia-fabricmanager, set `FABRIC_MODE=1` in /usr/share/nvidia/nvswitch/fabricmanager.cfg,\n" +
		"      `systemctl enable --now nvidia-fabricmanager`, then `fmpm -l` lists the partitions.\n")
	fmt.Fprintf(b, "   c. Partitions are by GPU module id (%s).\n", f.PartitionSource)
	b.WriteString("   d. Before each `virsh start`, activate its partition; after it shuts down, deactivate it:\n")
	for _, vm := range p.VMs {
		if vm.Partition == nil {
			fmt.Fprintf(b, "      - %s: no partition holds its GPUs (see the warnings): its GPUs get no NVLink\n", vm.Name)
			continue
		}
		fmt.Fprintf(b, "      - %s: `fmpm -a %d` (GPUs %s, modules %s), then `virsh start %s`; after shutdown `fmpm -d %d`\n",
			vm.Name, vm.Partition.ID, host.JoinPCI(vm.Partition.GPUs, ", "), joinComma(vm.Partition.Modules), vm.Name, vm.Partition.ID)
	}
}
