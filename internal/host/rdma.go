package host

import "strings"

// ClassInfiniBand is the serial-bus InfiniBand controller class that older
// HCAs (QLogic/Intel qib, some Mellanox parts) report instead of a network
// class.
const ClassInfiniBand = "0x0c06"

// RDMADevicesOf lists the RDMA devices on a PCI function.
func (s *Snapshot) RDMADevicesOf(address PCIAddress) []string {
	var out []string
	for _, r := range s.RDMADevices {
		if r.PCIAddress == address {
			out = append(out, r.Name)
		}
	}
	return out
}

// RDMACapable reports a PCI function that can carry RDMA: it has an RDMA
// device, or it is an InfiniBand controller (class 0x0c06), or a Mellanox
// network function (every ConnectX and BlueField does RoCE or InfiniBand).
func (s *Snapshot) RDMACapable(d *PCIDevice) bool {
	c := strings.ToLower(d.Class)
	return len(s.RDMADevicesOf(d.Address)) > 0 ||
		strings.HasPrefix(c, ClassInfiniBand) ||
		(d.Vendor == VendorMellanox && IsNetworkClass(c))
}
