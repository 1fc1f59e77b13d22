package testhost

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// StartRoutingSM starts an OpenSM with a chosen routing engine (ftree,
// minhop, updn, dnup, ...) that writes its dumps (opensm-lfts.dump and
// friends) into its own directory, waits until the subnet is up (the
// dump is written before), and returns the dump's path. The engine actually used is checked: OpenSM
// falls back to minhop when an engine fails, so a fallback is a test
// failure, not a silent substitution.
func (s *IBSim) StartRoutingSM(engine string, switches int, timeout time.Duration) string {
	s.t.Helper()
	dir := filepath.Join(s.Dir, fmt.Sprintf("sm%d-%s", len(s.sms), engine))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	out, _ := os.Create(filepath.Join(dir, "osm.out"))
	log := filepath.Join(dir, "osm.log")
	// -D 0x43 -d2: errors, info and routing, flushed (the routing level
	// makes OpenSM write its LFT dump); -s 0: no periodic sweeps, the
	// tables stay as computed.
	cmd := exec.Command("opensm", "-R", engine, "-D", "0x43", "-d2", "-s", "0", "--dump_files_dir", dir, "-f", log)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
	cmd.Env = append(os.Environ(), append(s.Env(), "OSM_TMP_DIR="+dir, "OSM_CACHE_DIR="+dir)...)
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.sms = append(s.sms, cmd)
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(log)
		if m := configuredRE.FindSubmatch(b); m != nil && bytes.Contains(b, []byte("SUBNET UP")) {
			if string(m[1]) != engine {
				s.t.Fatalf("opensm -R %s fell back to %s:\n%s", engine, m[1], tailLines(string(b), 40))
			}
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("opensm -R %s: subnet not up within %s; log:\n%s", engine, timeout, tailLines(string(b), 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
	dump := filepath.Join(dir, "opensm-lfts.dump")
	b, err := os.ReadFile(dump)
	if err != nil {
		s.t.Fatal(err)
	}
	if n := strings.Count(string(b), "lids dumped"); n != switches {
		s.t.Fatalf("opensm -R %s: the forwarding table dump has %d switches, want %d", engine, n, switches)
	}
	return dump
}

// configuredRE is OpenSM's line saying which engine routed the subnet.
var configuredRE = regexp.MustCompile(`osm_ucast_mgr_process: (\S+) tables configured on all switches`)

func tailLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
