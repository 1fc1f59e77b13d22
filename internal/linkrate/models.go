package linkrate

import "strings"

// Model is what a device family can do at best, from its datasheet.
type Model struct {
	Vendor, Device string // PCI or IB vendor/device id, 0x-prefixed lowercase hex
	Name           string
	Switch         bool
	// MaxSpeed and Widths bound the InfiniBand link (empty MaxSpeed: the
	// part has no InfiniBand mode).
	MaxSpeed string
	Widths   []int
	// MaxEthGbps is the fastest Ethernet port rate of the family (0: no
	// Ethernet mode). A board of the family may be slower (a dual-port
	// 25G ConnectX-4 Lx); the exact part is in Boards.
	MaxEthGbps float64
	Source     string
}

// MaxIBGbps is the fastest InfiniBand link of the family (4X at MaxSpeed,
// or the widest width it has).
func (m Model) MaxIBGbps() float64 {
	if m.MaxSpeed == "" || len(m.Widths) == 0 {
		return 0
	}
	return float64(m.Widths[len(m.Widths)-1]) * LaneGbps(m.MaxSpeed)
}

// MaxGbps is the fastest port of the family on a link layer.
func (m Model) MaxGbps(l Layer) float64 {
	if l == InfiniBand {
		return m.MaxIBGbps()
	}
	return m.MaxEthGbps
}

// HasWidth reports whether the family can train at w lanes.
func (m Model) HasWidth(w int) bool {
	for _, x := range m.Widths {
		if x == w {
			return true
		}
	}
	return false
}

const (
	mellanox = "0x15b3"
	// ibVendorMellanox is how ibnetdiscover prints the IB vendor id.
	ibVendorMellanox = "0x2c9"
	srcPB            = "NVIDIA/Mellanox product briefs"
)

// ConnectX HDR and later split a 4X port into 2X (HDR100, NDR200); none
// ever did 8X or 12X.
var (
	w14  = []int{1, 4}
	w124 = []int{1, 2, 4}
)

// Models lists device families by PCI device id (the same number is the
// IB devid ibnetdiscover prints, in decimal-derived hex).
var Models = []Model{
	{mellanox, "0x673c", "ConnectX-2", false, "QDR", w14, 10, srcPB},
	{mellanox, "0x1003", "ConnectX-3", false, "FDR", w14, 56, srcPB},
	{mellanox, "0x1007", "ConnectX-3 Pro", false, "FDR", w14, 56, srcPB},
	{mellanox, "0x1011", "Connect-IB", false, "FDR", w14, 0, srcPB},
	{mellanox, "0x1013", "ConnectX-4", false, "EDR", w14, 100, srcPB},
	{mellanox, "0x1015", "ConnectX-4 Lx", false, "", nil, 50, srcPB},
	{mellanox, "0x1017", "ConnectX-5", false, "EDR", w14, 100, srcPB},
	{mellanox, "0x1019", "ConnectX-5 Ex", false, "EDR", w14, 100, srcPB},
	{mellanox, "0x101b", "ConnectX-6", false, "HDR", w124, 200, srcPB},
	{mellanox, "0x101d", "ConnectX-6 Dx", false, "", nil, 200, srcPB},
	{mellanox, "0x101f", "ConnectX-6 Lx", false, "", nil, 50, srcPB},
	{mellanox, "0x1021", "ConnectX-7", false, "NDR", w124, 400, srcPB},
	{mellanox, "0x1023", "ConnectX-8", false, "XDR", w124, 800, srcPB},
	{mellanox, "0xa2d6", "BlueField-2", false, "HDR", w124, 200, srcPB},
	{mellanox, "0xa2dc", "BlueField-3", false, "NDR", w124, 400, srcPB},
	{mellanox, "0xc738", "SwitchX/SwitchX-2", true, "FDR", w14, 56, srcPB},
	{mellanox, "0xcb20", "Switch-IB", true, "EDR", w14, 0, srcPB},
	{mellanox, "0xcf08", "Switch-IB 2", true, "EDR", w14, 0, srcPB},
	{mellanox, "0xd2f0", "Quantum", true, "HDR", w124, 0, srcPB},
	{mellanox, "0xd2f2", "Quantum-2", true, "NDR", w124, 0, srcPB},
	{mellanox, "0xd2f4", "Quantum-3", true, "XDR", w124, 0, srcPB},
	{"0x1077", "0x7322", "QLogic QLE7340 (qib)", false, "QDR", w14, 0, "QLogic TrueScale datasheet"},
	{"0x1077", "0x7220", "QLogic QLE7240 (qib)", false, "DDR", w14, 0, "QLogic TrueScale datasheet"},
}

// ModelOf finds a family by vendor and device id. Vendor may be the PCI
// id (0x15b3) or the IB vendor id ibnetdiscover prints (0x2c9); ids are
// compared without case and leading zeros.
func ModelOf(vendor, device string) (Model, bool) {
	v, d := normHex(vendor), normHex(device)
	if v == ibVendorMellanox {
		v = mellanox
	}
	for _, m := range Models {
		if m.Vendor == v && m.Device == d {
			return m, true
		}
	}
	return Model{}, false
}

func normHex(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "0x")
	s = strings.TrimLeft(s, "0")
	if s == "" {
		s = "0"
	}
	return "0x" + s
}

// Board is one orderable part, known by the board id (PSID) its firmware
// reports: the exact port rate, which the family table cannot know.
type Board struct {
	PSIDPrefix string // board_id in sysfs, e.g. MT_2420110034
	Part       string
	MaxGbps    float64
}

// Boards lists parts whose port rate is below their family's best. Only
// board ids confirmed from vendor release notes are listed: an unknown
// board falls back to the family, and a rule that needs the exact part
// then says it does not know.
var Boards = []Board{
	{"MT_2420110034", "MCX4121A-ACAT (ConnectX-4 Lx, 2×25GbE)", 25},
	{"MT_2420111034", "MCX4121A-XCAT (ConnectX-4 Lx, 2×10GbE)", 10},
	{"MT_2180110032", "MCX455A-ECAT (ConnectX-4 VPI, 1×EDR/100GbE)", 100},
}

// BoardOf finds a part by its board id.
func BoardOf(boardID string) (Board, bool) {
	b := strings.TrimSpace(boardID)
	for _, x := range Boards {
		if b != "" && strings.HasPrefix(b, x.PSIDPrefix) {
			return x, true
		}
	}
	return Board{}, false
}
