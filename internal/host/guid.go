package host

import (
	"fmt"
	"strconv"
	"strings"
)

// GUID is a 64-bit InfiniBand GUID (node, port or system image), one type
// for the host and the fabric snapshots so a host's ports can be found in
// a fabric scan. It prints as infiniband-diags do (0x506b4b0300433a00) and
// parses that form, sysfs's (506b:4b03:0043:3a00) and bare hex.
type GUID uint64

// ParseGUID reads a GUID in any of the forms the tools print.
func ParseGUID(s string) (GUID, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
	if strings.Count(t, ":") == 3 {
		t = strings.ReplaceAll(t, ":", "")
	}
	if t == "" || len(t) > 16 {
		return 0, fmt.Errorf("guid %q: want 0x and up to 16 hex digits, or xxxx:xxxx:xxxx:xxxx", s)
	}
	v, err := strconv.ParseUint(t, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("guid %q: want 0x and up to 16 hex digits, or xxxx:xxxx:xxxx:xxxx", s)
	}
	return GUID(v), nil
}

// String is the infiniband-diags form, 0x and 16 hex digits.
func (g GUID) String() string { return fmt.Sprintf("0x%016x", uint64(g)) }

// Sysfs is the form /sys/class/infiniband prints.
func (g GUID) Sysfs() string {
	v := uint64(g)
	return fmt.Sprintf("%04x:%04x:%04x:%04x", v>>48, v>>32&0xffff, v>>16&0xffff, v&0xffff)
}

// IsZero reports an absent GUID.
func (g GUID) IsZero() bool { return g == 0 }

// MarshalText writes the infiniband-diags form.
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText reads any form ParseGUID takes; empty is zero.
func (g *GUID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*g = 0
		return nil
	}
	v, err := ParseGUID(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}
