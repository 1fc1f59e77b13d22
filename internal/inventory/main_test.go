package inventory

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

func countFiles(root string) int {
	n := 0
	filepath.WalkDir(root, func(_ string, d fs.DirEntry, _ error) error {
		n++
		return nil
	})
	return n
}
