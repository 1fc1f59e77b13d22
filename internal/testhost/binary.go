package testhost

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binaryErr  error
	binaryOut  []byte
)

// Rdmalab builds the rdmalab binary once per test binary and returns its
// path, for tests that run it as users and peers do (over ssh, under
// salloc, as Slurm's HealthCheckProgram). Main removes it.
func Rdmalab(t testing.TB) string {
	t.Helper()
	binaryOnce.Do(func() {
		_, self, _, _ := runtime.Caller(0)
		module := filepath.Join(filepath.Dir(self), "..", "..")
		if binaryDir, binaryErr = os.MkdirTemp("", tempPrefix("bin")); binaryErr != nil {
			return
		}
		// World-readable: Slurm and sshd sessions may run it as another user.
		os.Chmod(binaryDir, 0o755)
		binaryPath = filepath.Join(binaryDir, "rdmalab")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/rdmalab")
		cmd.Dir = module
		binaryOut, binaryErr = cmd.CombinedOutput()
	})
	if binaryErr != nil {
		t.Fatalf("build rdmalab: %v\n%s", binaryErr, binaryOut)
	}
	return binaryPath
}
