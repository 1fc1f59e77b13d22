package report

import (
	"os"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// testhost.Main removes the captures this package's tests unpack.
func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }
