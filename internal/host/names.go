package host

import "strings"

// Vendor ids that matter here.
const (
	VendorNVIDIA   = "0x10de"
	VendorMellanox = "0x15b3"
	VendorAMD      = "0x1002"
)

// ClassName names a PCI class code ("0x020000") the way lspci does, for
// the classes this tool cares about; others fall back to the base class.
func ClassName(class string) string {
	c := strings.TrimPrefix(strings.ToLower(class), "0x")
	if len(c) < 4 {
		return "unknown"
	}
	if n, ok := map[string]string{
		"0200": "Ethernet controller", "0207": "InfiniBand controller", "0280": "Network controller",
		"0300": "VGA compatible controller", "0302": "3D controller", "0380": "Display controller",
		"0108": "Non-Volatile memory controller", "0106": "SATA controller", "0104": "RAID bus controller",
		"0600": "Host bridge", "0601": "ISA bridge", "0604": "PCI bridge", "0680": "Bridge",
		"0403": "Audio device", "0c03": "USB controller", "1200": "Processing accelerators",
		"0880": "System peripheral", "0c05": "SMBus", "0c06": "InfiniBand controller",
	}[c[:4]]; ok {
		return n
	}
	if n, ok := map[string]string{
		"01": "Mass storage controller", "02": "Network controller", "03": "Display controller",
		"04": "Multimedia controller", "05": "Memory controller", "06": "Bridge", "07": "Communication controller",
		"08": "System peripheral", "0c": "Serial bus controller", "11": "Signal processing controller",
		"12": "Processing accelerators", "ff": "Unassigned class",
	}[c[:2]]; ok {
		return n
	}
	return "unknown"
}

// IsGPUClass reports whether a PCI function is a GPU: any 3D controller or
// processing accelerator, and VGA controllers from GPU vendors (a BMC's VGA
// is not a GPU).
func IsGPUClass(class, vendor string) bool {
	c := strings.TrimPrefix(strings.ToLower(class), "0x")
	if len(c) < 4 {
		return false
	}
	switch c[:4] {
	case "0302", "1200":
		return true
	case "0300", "0380":
		return vendor == VendorNVIDIA || vendor == VendorAMD
	}
	return false
}

// IsBridgeClass reports a PCI-to-PCI bridge (class 0x0604xx).
func IsBridgeClass(class string) bool {
	return strings.HasPrefix(strings.ToLower(class), "0x0604")
}

// IsNetworkClass reports a network controller (class 0x02xxxx).
func IsNetworkClass(class string) bool {
	return strings.HasPrefix(strings.ToLower(class), "0x02")
}

// DeviceName gives a short marketing name for well-known GPUs and NICs.
func DeviceName(vendor, device string) string {
	return deviceNames[vendor+":"+device]
}

var deviceNames = map[string]string{
	"0x15b3:0x1003": "ConnectX-3", "0x15b3:0x1007": "ConnectX-3 Pro",
	"0x15b3:0x1013": "ConnectX-4", "0x15b3:0x1015": "ConnectX-4 Lx", "0x15b3:0x1017": "ConnectX-5",
	"0x15b3:0x1019": "ConnectX-5 Ex", "0x15b3:0x101b": "ConnectX-6", "0x15b3:0x101d": "ConnectX-6 Dx",
	"0x15b3:0x101f": "ConnectX-6 Lx", "0x15b3:0x1021": "ConnectX-7", "0x15b3:0x1023": "ConnectX-8",
	"0x15b3:0xa2d6": "BlueField-2", "0x15b3:0xa2dc": "BlueField-3",
	"0x15b3:0x1014": "ConnectX-4 VF", "0x15b3:0x1016": "ConnectX-4 Lx VF", "0x15b3:0x1018": "ConnectX-5 VF",
	"0x15b3:0x101a": "ConnectX-5 Ex VF", "0x15b3:0x101c": "ConnectX-6 VF", "0x15b3:0x101e": "ConnectX VF",
	"0x10de:0x2204": "GeForce RTX 3090", "0x10de:0x2203": "GeForce RTX 3090 Ti", "0x10de:0x2206": "GeForce RTX 3080",
	"0x10de:0x2684": "GeForce RTX 4090", "0x10de:0x2704": "GeForce RTX 4080", "0x10de:0x2b85": "GeForce RTX 5090",
	"0x10de:0x1e02": "TITAN RTX", "0x10de:0x1eb8": "Tesla T4", "0x10de:0x1bb3": "Tesla P4",
	"0x10de:0x15f8": "Tesla P100", "0x10de:0x1db1": "Tesla V100", "0x10de:0x1db8": "Tesla V100",
	"0x10de:0x20b0": "A100 SXM4", "0x10de:0x20b2": "A100 SXM4 80GB", "0x10de:0x20b5": "A100 PCIe 80GB",
	"0x10de:0x1af1": "NVSwitch (A100 HGX)", "0x10de:0x22a3": "NVSwitch (H100/H200 HGX)",
	"0x10de:0x2330": "H100 SXM5", "0x10de:0x2331": "H100 PCIe", "0x10de:0x2335": "H200 SXM",
	"0x10de:0x2901": "B200", "0x10de:0x1ac2": "NVSwitch",
}
