// Package buildinfo says which rdmalab runs: the version, the commit and
// the build date, from -ldflags for release builds and otherwise from what
// the Go toolchain stamps into every binary built in a checkout (go build,
// go install): the module version and the VCS revision and time.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Set at release build time:
//
//	go build -ldflags "-X github.com/rdmalab/rdmalab/internal/buildinfo.version=v1.2.3
//	  -X github.com/rdmalab/rdmalab/internal/buildinfo.commit=$(git rev-parse HEAD)
//	  -X github.com/rdmalab/rdmalab/internal/buildinfo.date=$(date -u +%FT%TZ)"
var version, commit, date string

// Info is what a binary says of itself.
type Info struct {
	Version   string `json:"version"`          // v1.2.3, a module pseudo-version, or "dev"
	Commit    string `json:"commit,omitempty"` // the full VCS revision
	Date      string `json:"date,omitempty"`   // when that commit was made (or the release built)
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
}

var (
	once sync.Once
	info Info
)

// Get reads the build's identity once.
func Get() Info {
	once.Do(func() {
		info = Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
		if bi, ok := debug.ReadBuildInfo(); ok {
			if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				info.Version = bi.Main.Version
			}
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					if info.Commit == "" {
						info.Commit = s.Value
					}
				case "vcs.time":
					if info.Date == "" {
						info.Date = s.Value
					}
				case "vcs.modified":
					info.Modified = s.Value == "true"
				}
			}
		}
		if info.Version == "" {
			info.Version = "dev"
		}
	})
	return info
}

// String is the one-line form --version prints:
// "rdmalab v1.2.3 (commit 0123abc…, 2026-11-26T09:00:00Z, go1.26.8)".
func (i Info) String() string {
	s := "rdmalab " + i.Version
	var parts []string
	if i.Commit != "" {
		c := i.Commit
		if i.Modified {
			c += " with local changes"
		}
		parts = append(parts, "commit "+c)
	}
	if i.Date != "" {
		parts = append(parts, i.Date)
	}
	parts = append(parts, i.GoVersion)
	s += " ("
	for n, p := range parts {
		if n > 0 {
			s += ", "
		}
		s += p
	}
	return s + ")"
}
