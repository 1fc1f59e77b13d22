package judge

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// A saved tool output (ibstat, ibstatus, ibv_devinfo) is judged by the
// host rules, whose evidence then names the tool that printed the value:
// never a /sys path nobody read. An expectation makes the rate and link
// layer rules quote too.
func TestToolOutputQuotesNoSysfs(t *testing.T) {
	root := filepath.Join(testhost.SharedTestdata(t), "ibtools")
	opts := []Options{{}, {Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 800}, Layer: linkrate.InfiniBand, Source: "--expect-rate"}}}
	judged := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, o := range opts {
			r, err := One(p, b, o)
			if err != nil || !strings.HasPrefix(r.Format, "ib") {
				continue // not a host tool's output
			}
			judged++
			for _, f := range r.Findings {
				for _, e := range f.Evidence {
					if strings.Contains(e.Source, "/sys/") {
						t.Errorf("%s: %s %s quotes %s (%s)", p, f.Check, f.Subject, e.Source, e.What)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if judged < 20 {
		t.Errorf("judged %d outputs: the test data moved?", judged)
	}
}
