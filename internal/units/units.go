// Package units reads the sizes users type, in one syntax for every
// command: a number and a unit, always. Binary units (K, M, G, T, KiB,
// MiB, GiB, TiB) are powers of 1024, as the kernel, libvirt and hugepage
// sizes use them; SI units (kB, KB, MB, GB, TB) are powers of 1000, as
// files, disks and datasets are sized. A bare number is refused: "200"
// as 200 bytes of guest memory is never what anyone meant.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxBytes bounds a size (an exbibyte): beyond it the figures stop
// being about real memory, files or transfers.
const maxBytes = 1 << 60

var multipliers = map[string]float64{
	"B": 1,
	"K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TIB": 1 << 40, "P": 1 << 50, "PIB": 1 << 50,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
}

// ParseBytes reads "32G", "2M", "1GiB", "280GB", "1.5TB" as bytes. Zero,
// negative, unitless and absurd values are refused with the reason.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 {
		if i < 0 && t != "" {
			return 0, fmt.Errorf("size %q has no unit: write %sG (GiB) or %sGB (10^9 bytes)", s, t, t)
		}
		return 0, fmt.Errorf("size %q: want a number and a unit, such as 32G, 2M, 1GiB or 280GB", s)
	}
	num, unit := t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	m, ok := multipliers[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q; binary K M G T (KiB MiB GiB TiB), decimal KB MB GB TB", s, t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("size %q: want a positive number and a unit, such as 32G", s)
	}
	b := v * m
	if b > maxBytes || b < 1 {
		return 0, fmt.Errorf("size %q: out of range", s)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(b), nil
}

// FormatBytes prints a byte count in the largest binary unit that divides
// it ("32G", "512M", "4096"), so ParseBytes reads it back exactly.
func FormatBytes(b int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"P", 1 << 50}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if b != 0 && b%u.m == 0 {
			return strconv.FormatInt(b/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(b, 10) + "B"
}
