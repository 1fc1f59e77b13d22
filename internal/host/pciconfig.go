package host

import "encoding/binary"

// ACS control bits (PCIe base spec, ACS Extended Capability).
const (
	ACSSrcValid    = 1 << 0
	ACSReqRedir    = 1 << 2
	ACSCmpltRedir  = 1 << 3
	ACSDirectTrans = 1 << 6
)

// ParsePCIConfig reads the ACS Control register and the ATS Enable bit
// from a function's config space as sysfs' config file gives it. Only
// root sees past the 64-byte header; with less than 256 bytes there are
// no extended capabilities to read (nil, nil).
func ParsePCIConfig(b []byte) (acsCtl *uint16, atsEnabled *bool) {
	if len(b) < 0x104 {
		return nil, nil
	}
	seen := map[int]bool{}
	for off := 0x100; off != 0 && off+8 <= len(b) && !seen[off]; {
		seen[off] = true
		h := binary.LittleEndian.Uint32(b[off:])
		if h == 0 || h == 0xffffffff {
			break
		}
		switch h & 0xffff {
		case 0x000d: // ACS: capability at +4, control at +6
			v := binary.LittleEndian.Uint16(b[off+6:])
			acsCtl = &v
		case 0x000f: // ATS: control at +6, bit 15 Enable
			on := binary.LittleEndian.Uint16(b[off+6:])&(1<<15) != 0
			atsEnabled = &on
		}
		off = int(h>>20) &^ 3
	}
	return acsCtl, atsEnabled
}
