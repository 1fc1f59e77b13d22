package design

import (
	"strings"

	"github.com/rdmalab/rdmalab/internal/units"
)

// Size is an amount of data, in bytes, read in the one size syntax of
// every command (units.ParseBytes): GB is 10⁹ bytes (how disks, object
// stores and the seed's "140 GB weight file" count), GiB and G are 2³⁰.
type Size struct {
	Bytes float64 `json:"bytes"`
	Text  string  `json:"text"` // as given: "280GB"
}

// ParseSize reads "280GB", "1.5 TiB", "140 gb": a positive number and a
// unit, which is required (a bare "280" could be bytes, GB or GiB).
func ParseSize(s string) (Size, error) {
	b, err := units.ParseBytes(s)
	if err != nil {
		return Size{}, err
	}
	return Size{Bytes: float64(b), Text: strings.TrimSpace(s)}, nil
}

func (s Size) String() string { return s.Text }
