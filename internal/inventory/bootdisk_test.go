package inventory

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The root file system on LVM on an NVMe partition: / is followed from
// /dev/mapper through the device-mapper slave and the partition to the
// NVMe controller's PCI function (what plan vms keeps on the host).
func TestBootDiskThroughLVM(t *testing.T) {
	root := testhost.WriteTree(t, testhost.Seed000())
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p, target string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write("/proc/mounts", "sysfs /sys sysfs rw 0 0\n/dev/mapper/cs-root / xfs rw,relatime 0 0\n/dev/nvme0n1p1 /boot xfs rw 0 0\n")
	write("/dev/dm-0", "")
	link("/dev/mapper/cs-root", "../dm-0")
	disk := "/sys/devices/pci0000:40/0000:40:01.1/0000:42:00.0/nvme/nvme0/nvme0n1"
	write(disk+"/nvme0n1p2/partition", "2\n")
	write("/sys/devices/virtual/block/dm-0/dev", "253:0\n")
	link("/sys/devices/virtual/block/dm-0/slaves/nvme0n1p2", "../../../../.."+disk+"/nvme0n1p2")
	link("/sys/class/block/dm-0", "../../devices/virtual/block/dm-0")
	link("/sys/class/block/nvme0n1p2", "../.."+disk[len("/sys"):]+"/nvme0n1p2")
	s := seedTree(t, testhost.Seed000())
	if s.BootDisk != nil {
		t.Errorf("seed tree without / in /proc/mounts: boot disk %+v", s.BootDisk)
	}
	s = collect(t, testhost.Capture{Root: root})
	bd := s.BootDisk
	if bd == nil || bd.Device != "/dev/mapper/cs-root" || bd.Disk != "nvme0n1" || bd.PCI.String() != "0000:42:00.0" {
		t.Fatalf("boot disk %+v", bd)
	}
}
