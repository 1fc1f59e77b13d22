package design

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is an amount of data, in bytes. The unit is part of the text a user
// gives: GB is 10⁹ bytes (how disks, object stores and the seed's "140 GB
// weight file" count), GiB is 2³⁰.
type Size struct {
	Bytes float64 `json:"bytes"`
	Text  string  `json:"text"` // as given, normalised: "280 GB"
}

var sizeUnits = []struct {
	name  string
	bytes float64
}{
	{"B", 1},
	{"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15},
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"PiB", 1 << 50},
}

// maxSizeBytes bounds what a size may be (an exabyte): beyond it the
// figures stop being about a real transfer.
const maxSizeBytes = 1e18

// ParseSize reads "280GB", "1.5 TiB", "140 gb": a positive number and a
// unit, which is required (a bare "280" could be bytes, GB or GiB). The
// unit's case is ignored except that KiB-style units need their "i".
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	if i <= 0 {
		return Size{}, fmt.Errorf("size %q: want a number and a unit, e.g. 280GB, 1.5TiB", s)
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	if err != nil {
		return Size{}, fmt.Errorf("size %q: %q is not a number", s, t[:i])
	}
	unit := strings.TrimSpace(t[i:])
	for _, u := range sizeUnits {
		if strings.EqualFold(unit, u.name) {
			b := v * u.bytes
			if !(b > 0) || b > maxSizeBytes || math.IsInf(b, 0) {
				return Size{}, fmt.Errorf("size %q: must be more than 0 and at most 1 EB", s)
			}
			return Size{Bytes: b, Text: strconv.FormatFloat(v, 'f', -1, 64) + " " + u.name}, nil
		}
	}
	if unit == "" {
		return Size{}, fmt.Errorf("size %q: a unit is required (B, kB, MB, GB, TB, PB or KiB, MiB, GiB, TiB, PiB)", s)
	}
	return Size{}, fmt.Errorf("size %q: unknown unit %q; want B, kB, MB, GB, TB, PB or KiB, MiB, GiB, TiB, PiB", s, unit)
}

func (s Size) String() string { return s.Text }
