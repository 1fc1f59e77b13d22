// Command rdmalab builds, verifies and runs multi-node RDMA/GPU clusters:
// inventory a host, check it, plan VMs, check a fabric, benchmark pairs.
package main

import (
	"os"

	"github.com/rdmalab/rdmalab/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
