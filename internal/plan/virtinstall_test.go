package plan

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Every command of virt-install.sh, run as written, passes virt-install's
// own --dry-run against a libvirt test connection that describes the
// snapshot's host: an x86_64 KVM q35/UEFI hypervisor holding its PCI
// devices (as node devices) and the disk images the plan names. virtinst's
// test suite connects the same way (a test:/// driver file plus
// capabilities and domain capabilities); plain test:///default offers only
// i686 "test" guests. virt-install 4.1 refuses, for instance,
// iothreadpin under --iothreads and an --import without --osinfo.
func TestVirtInstallDryRun(t *testing.T) {
	real := testhost.RequireTool(t, "virt-install")
	for _, c := range []struct {
		host string
		req  Request
	}{
		{"seed000-epyc", Request{VMs: 2}},
		{"hgx-h200", Request{VMs: 1, MemoryBytes: 64 << 30}},
		{"hgx-h200", Request{VMs: 2}},
		{"hgx-h200", Request{VMs: 8, MemoryBytes: 100 << 30, PageSizeBytes: 2 << 20}},
		{"r730-qdr", Request{VMs: 1, VCPUs: 8, OSInfo: "centos-stream9"}},
	} {
		t.Run(fmt.Sprintf("%s/%d", c.host, c.req.VMs), func(t *testing.T) {
			s := load(t, c.host)
			p := mustPlan(t, s, c.req)
			dir := testhost.TempDir(t)
			uri := testConnection(t, dir, s, p)
			// A virt-install on PATH that adds the test connection and
			// --dry-run, so the script runs exactly as a user would run it.
			bin := filepath.Join(dir, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			wrapper := fmt.Sprintf("#!/bin/sh\nexec %s --connect '%s' --dry-run \"$@\"\n", real, uri)
			if err := os.WriteFile(filepath.Join(bin, "virt-install"), []byte(wrapper), 0o755); err != nil {
				t.Fatal(err)
			}
			script := filepath.Join(dir, "virt-install.sh")
			if err := os.WriteFile(script, []byte(VirtInstall(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", "-x", script)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+dir, "XDG_CACHE_HOME="+dir, "XDG_CONFIG_HOME="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("virt-install.sh under --dry-run: %v\n%s", err, out)
			}
			if n := strings.Count(string(out), "Dry run completed successfully"); n != len(p.VMs) {
				t.Errorf("%d dry runs completed, want %d\n%s", n, len(p.VMs), out)
			}
		})
	}
}

// testConnection writes a libvirt test driver file for s (its CPUs,
// memory, every PCI function as a node device, a default network and a
// pool holding each VM's disk) plus x86_64 KVM capabilities and q35 domain
// capabilities with UEFI, and returns virtinst's test URI for them.
func testConnection(t *testing.T, dir string, s *host.Snapshot, p *Plan) string {
	t.Helper()
	var b strings.Builder
	var mem int64
	for _, n := range s.NUMANodes {
		mem += n.MemTotalBytes
	}
	pkgs := map[int]bool{}
	for _, c := range s.CPUs {
		pkgs[c.Package] = true
	}
	fmt.Fprintf(&b, "<node>\n  <cpu><nodes>1</nodes><sockets>%d</sockets><cores>%d</cores><threads>1</threads><active>%d</active><mhz>2000</mhz><model>x86_64</model></cpu>\n",
		len(pkgs), len(s.CPUs)/len(pkgs), len(s.CPUs))
	fmt.Fprintf(&b, "  <memory>%d</memory>\n", mem>>10)
	b.WriteString("  <network><name>default</name><bridge name='virbr0'/><forward/><ip address='192.168.122.1' netmask='255.255.255.0'/></network>\n")
	b.WriteString("  <pool type='dir'><name>default</name><target><path>/var/lib/libvirt/images</path></target>\n")
	for _, vm := range p.VMs {
		fmt.Fprintf(&b, "    <volume type='file'><name>%s</name><capacity unit='G'>100</capacity><target><format type='qcow2'/></target></volume>\n", filepath.Base(DiskPath(vm)))
	}
	b.WriteString("  </pool>\n")
	for _, d := range s.PCIDevices {
		a := d.Address
		group := ""
		if d.IOMMUGroup != nil {
			group = fmt.Sprintf("<iommuGroup number='%d'><address domain='0x%04x' bus='0x%02x' slot='0x%02x' function='0x%x'/></iommuGroup>", *d.IOMMUGroup, a.Domain, a.Bus, a.Device, a.Function)
		}
		fmt.Fprintf(&b, "  <device><name>pci_%04x_%02x_%02x_%x</name><parent>computer</parent><capability type='pci'><class>%s</class><domain>%d</domain><bus>%d</bus><slot>%d</slot><function>%d</function><product id='%s'/><vendor id='%s'/>%s</capability></device>\n",
			a.Domain, a.Bus, a.Device, a.Function, d.Class, a.Domain, a.Bus, a.Device, a.Function, d.Device, d.Vendor, group)
	}
	b.WriteString("</node>\n")
	caps := `<capabilities>
  <host><uuid>00000000-0000-0000-0000-000000000001</uuid><cpu><arch>x86_64</arch></cpu><iommu support='yes'/></host>
  <guest>
    <os_type>hvm</os_type>
    <arch name='x86_64'>
      <wordsize>64</wordsize>
      <emulator>/usr/bin/qemu-system-x86_64</emulator>
      <machine canonical='pc-q35-7.2' maxCpus='288'>q35</machine>
      <machine maxCpus='288'>pc-q35-7.2</machine>
      <domain type='qemu'/>
      <domain type='kvm'/>
    </arch>
    <features><acpi default='on' toggle='yes'/><apic default='on' toggle='no'/></features>
  </guest>
</capabilities>
`
	domcaps := `<domainCapabilities>
  <path>/usr/bin/qemu-system-x86_64</path>
  <domain>kvm</domain>
  <machine>pc-q35-7.2</machine>
  <arch>x86_64</arch>
  <vcpu max='288'/>
  <iothreads supported='yes'/>
  <os supported='yes'>
    <enum name='firmware'><value>bios</value><value>efi</value></enum>
    <loader supported='yes'>
      <value>/usr/share/OVMF/OVMF_CODE_4M.fd</value>
      <enum name='type'><value>rom</value><value>pflash</value></enum>
      <enum name='readonly'><value>yes</value><value>no</value></enum>
      <enum name='secure'><value>no</value></enum>
    </loader>
  </os>
  <cpu><mode name='host-passthrough' supported='yes'/></cpu>
  <devices>
    <disk supported='yes'><enum name='diskDevice'><value>disk</value></enum><enum name='bus'><value>virtio</value><value>sata</value></enum></disk>
    <hostdev supported='yes'><enum name='mode'><value>subsystem</value></enum><enum name='subsysType'><value>pci</value></enum><enum name='pciBackend'><value>vfio</value></enum></hostdev>
  </devices>
</domainCapabilities>
`
	files := map[string]string{"driver.xml": b.String(), "caps.xml": caps, "domcaps.xml": domcaps}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("__virtinst_test__test://%s,caps=%s,domcaps=%s,fakeuri=qemu:///system",
		filepath.Join(dir, "driver.xml"), filepath.Join(dir, "caps.xml"), filepath.Join(dir, "domcaps.xml"))
}
