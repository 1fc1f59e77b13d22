package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/capture"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/spf13/cobra"
)

// hostInput is how a command gets its hosts: live, --root, or --snapshot.
type hostInput struct {
	root      string
	snapshots []string
}

func (in *hostInput) register(c *cobra.Command, multi bool) {
	c.Flags().StringVar(&in.root, "root", "/", "read the host from this root: a directory or a capture .tar.gz (rdmalab gather)")
	help := "read a saved snapshot instead of a host (from 'rdmalab inventory --output json'; example:NAME for a built-in one)"
	if multi {
		help += "; repeat for a fleet"
	}
	c.Flags().StringArrayVar(&in.snapshots, "snapshot", nil, help)
}

// load returns the hosts to work on.
func (in *hostInput) load() ([]*host.Snapshot, error) {
	if len(in.snapshots) > 0 {
		var out []*host.Snapshot
		for _, p := range in.snapshots {
			load := host.Load
			if name, ok := strings.CutPrefix(p, "example:"); ok {
				p, load = name, examples.Load
			}
			s, err := load(p)
			if err != nil {
				return nil, usageErr("%v", err)
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := collectRoot(in.root, nil)
	if err != nil {
		return nil, err
	}
	return []*host.Snapshot{s}, nil
}

// collectRoot inventories a root directory or capture archive; rec, when
// set, records what was read.
func collectRoot(root string, rec *hostfs.Recorder) (*host.Snapshot, error) {
	dir := root
	if capture.IsArchive(root) {
		tmp, done, err := tempDir()
		if err != nil {
			return nil, err
		}
		defer done()
		if err := capture.Extract(root, tmp); err != nil {
			return nil, usageErr("%v", err)
		}
		dir = treeRoot(tmp)
	} else if st, err := os.Stat(root); err != nil {
		return nil, usageErr("--root %s: %v", root, err)
	} else if !st.IsDir() {
		return nil, usageErr("--root %s: not a directory or a .tar.gz capture", root)
	}
	fsys, err := hostfs.New(dir)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if rec != nil {
		fsys.Record(rec)
	}
	if !fsys.Exists("/sys") && !fsys.Exists("/proc") {
		if !isIBClassDir(dir) {
			return nil, usageErr("--root %s: no sys/ or proc/ inside; point it at the directory that holds them", root)
		}
		// A copy of /sys/class/infiniband alone (as gpud and others keep
		// them): read it as that directory of an otherwise empty host.
		if err := fsys.Mount("/sys/class/infiniband", dir); err != nil {
			return nil, usageErr("%v", err)
		}
	}
	s := inventory.Collect(fsys, inventory.Options{})
	s.Source = root
	return s, nil
}

// treeRoot finds the root inside an unpacked archive: the directory itself,
// or its single subdirectory when the archive wraps the tree in one (as
// hwloc-gather-topology does).
func treeRoot(dir string) string {
	if exists(filepath.Join(dir, "sys")) || exists(filepath.Join(dir, "proc")) {
		return dir
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return dir
	}
	var subdirs []string
	for _, e := range ents {
		if e.IsDir() {
			subdirs = append(subdirs, e.Name())
		}
	}
	if len(subdirs) == 1 {
		return filepath.Join(dir, subdirs[0])
	}
	return dir
}

// isIBClassDir reports a directory that looks like /sys/class/infiniband:
// every entry has a ports/ directory.
func isIBClassDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		if !exists(filepath.Join(dir, e.Name(), "ports")) {
			return false
		}
	}
	return true
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func one(hosts []*host.Snapshot, cmd string) (*host.Snapshot, error) {
	if len(hosts) != 1 {
		return nil, usageErr("%s takes one host; got %d snapshots", cmd, len(hosts))
	}
	return hosts[0], nil
}
