package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// hostile is what a name from a host or the fabric may hold: ESC sequences
// that hide text and set the window title, a carriage return and a newline
// that would forge a line, a C1 control, quotes and a backslash.
const hostile = "\x1b[8mhid\x1b]0;t\x07\r\nERROR: forged \"q\" \\b\u0085"

// rawControl finds a control byte a renderer did not write itself: any C0
// but newline and tab, DEL, a C1 in UTF-8, invalid UTF-8; with colour,
// rdmalab's own SGR sequences are allowed.
func rawControl(s string, colour bool) string {
	if colour {
		s = regexp.MustCompile(`\x1b\[(0|1|2|1;31|31|32|33|35)m`).ReplaceAllString(s, "")
	}
	for i, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r == utf8.RuneError):
			lo := max(0, i-40)
			return strings.ToValidUTF8(s[lo:min(len(s), i+20)], "?")
		}
	}
	return ""
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// forged reports a line that the newline inside a hostile name started.
func forged(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " │|"), "ERROR: forged") {
			return true
		}
	}
	return false
}

// hostileMachine is Seed000 with every name from the host hostile and one
// port down (a failure naming a device and its host).
func hostileMachine() testhost.Machine {
	m := testhost.Seed000()
	m.Hostname = "epyc" + strings.ReplaceAll(hostile, "\n", "") // a hostname file holds one line
	rename := map[string]string{}
	for i := range m.RDMA {
		old := m.RDMA[i].Name
		m.RDMA[i].Name = old + hostile
		files := map[string]string{}
		for k, v := range m.Files {
			files[strings.Replace(k, "/"+old+"/", "/"+m.RDMA[i].Name+"/", 1)] = v
		}
		m.Files = files
	}
	for i := range m.Net {
		rename[m.Net[i].Name] = m.Net[i].Name + hostile
		m.Net[i].Name += hostile
	}
	for i := range m.RDMA {
		for j := range m.RDMA[i].Ports {
			for k := range m.RDMA[i].Ports[j].GIDs {
				m.RDMA[i].Ports[j].GIDs[k].Dev = rename[m.RDMA[i].Ports[j].GIDs[k].Dev]
			}
		}
	}
	m.RDMA[1].Ports[0].State, m.RDMA[1].Ports[0].Phys = "1: DOWN", "3: Disabled"
	return m
}

// hostileFabric is the recorded QDR lab fabric with every node description
// hostile (the JSON form may hold any string): its degraded link and its
// port errors still fail.
func hostileFabric(t *testing.T, dir string) string {
	b, err := os.ReadFile("../../examples/fabric/qdr-lab.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "desc" || k == "node_desc" || strings.HasSuffix(k, "_desc")) {
					x[k] = s + hostile
					continue
				}
				x[k] = walk(e)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	m := walk(doc).(map[string]any)
	// A GUID-less node with a junk description and a linked port: named
	// by its (zero) GUID, never a reason to drop the scan.
	m["nodes"] = append(m["nodes"].([]any), map[string]any{"guid": "", "type": "CA", "desc": "junk" + hostile, "ports": 1})
	m["ports"] = append(m["ports"].([]any), map[string]any{"node_guid": "", "node_desc": "junk" + hostile, "node_type": "CA", "port": 1,
		"state": "Active", "phys_state": "LinkUp", "width": "4X", "speed": "QDR"})
	out, _ := json.Marshal(m)
	if !strings.Contains(string(out), `\u001b[8m`) {
		t.Fatal("no description was made hostile")
	}
	p := filepath.Join(dir, "fabric.json")
	os.WriteFile(p, out, 0o644)
	return p
}

// Every command that prints a name, fed names holding ESC, CR, LF, C1,
// quotes and backslashes: no raw control byte in what it prints, and
// doctor --nhc prints exactly one line per failure.
func TestHostileNamesNeverRaw(t *testing.T) {
	dir := testhost.TempDir(t)
	root := testhost.WriteTree(t, hostileMachine())
	fab := hostileFabric(t, dir)
	ibstat := filepath.Join(dir, "ibstat.txt")
	os.WriteFile(ibstat, []byte("CA 'mlx5_0"+strings.ReplaceAll(hostile, "\n", "")+"'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tFirmware version: 20.31.1014\n\tHardware version: 0\n\tNode GUID: 0x1070fd0300123456\n\tSystem image GUID: 0x1070fd0300123456\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: Disabled\n\t\tRate: 10\n\t\tBase lid: 0\n\t\tLMC: 0\n\t\tSM lid: 0\n\t\tCapability mask: 0x2651e848\n\t\tPort GUID: 0x1070fd0300123456\n\t\tLink layer: InfiniBand\n"), 0o644)
	html := filepath.Join(dir, "r.html")
	prom := filepath.Join(dir, "x.prom")

	for _, c := range []struct {
		args    []string
		fails   bool   // a failure must be reported (the hostile names must not hide it)
		mention string // a part of a hostile name that must still be shown, escaped
	}{
		{[]string{"inventory", "--root", root}, false, `\x1b[8mhid`},
		{[]string{"doctor", "--root", root}, true, `\x1b[8mhid`},
		{[]string{"doctor", "--root", root, "--verbose"}, true, `\n`},
		{[]string{"fabric", "check", "--fabric", fab}, true, `\x1b[8mhid`},
		{[]string{"report", root, fab}, true, ""},
		{[]string{"report", "--html", html, root, fab}, true, ""},
		{[]string{"judge", ibstat}, true, `\x1b[8mhid`},
		{[]string{"plan", "vms", "--root", root}, false, `\x1b[8mhid`},
		{[]string{"exporter", "--root", root, "--textfile", prom}, false, ""},
	} {
		for _, colour := range []bool{false, true} {
			args := c.args
			if colour {
				args = append([]string{"--color", "always"}, args...)
			}
			out, errOut, code := run(t, args...)
			if code == ExitUsage {
				t.Errorf("%q: exit 2: %s", args, errOut)
				continue
			}
			if c.fails && code != ExitFindings {
				t.Errorf("%q: exit %d, want 1: the failure is hidden\n%s", args, code, out)
			}
			if bad := rawControl(out+errOut, colour); bad != "" {
				t.Errorf("%q: a raw control byte reached the terminal near %q", args, bad)
			}
			if colour && regexp.MustCompile(`\\x1b\[(0|1|2|1;31|32|33|35)m`).MatchString(out) {
				t.Errorf("%q: rdmalab's own colour was escaped as if it were data", args)
			}
			if forged(out + errOut) {
				t.Errorf("%q: a newline in a name forged a line:\n%s", args, out)
			}
			if c.mention != "" && !strings.Contains(out, c.mention) {
				t.Errorf("%q: the hostile name is not shown escaped (%q)\n%s", args, c.mention, out)
			}
		}
	}
	// A GUID that is junk is a snapshot rdmalab cannot read: one line,
	// escaped, exit 2.
	lit, _ := json.Marshal("not-a-guid" + hostile)
	junk := strings.Replace(mustRead(t, fab), `"guid":"0x0000000000200000"`, `"guid":`+string(lit), 1)
	junkFile := filepath.Join(dir, "junk.json")
	os.WriteFile(junkFile, []byte(junk), 0o644)
	if _, errOut, code := run(t, "fabric", "check", "--fabric", junkFile); code != ExitUsage || strings.Count(errOut, "\n") != 1 || rawControl(errOut, false) != "" || !strings.Contains(errOut, "not-a-guid") {
		t.Errorf("junk GUID: exit %d %q", code, errOut)
	}

	b, _ := os.ReadFile(html)
	if bad := rawControl(string(b), false); bad != "" || !strings.Contains(string(b), `\x1b[8mhid`) {
		t.Errorf("HTML report: raw control byte near %q, or the name missing", bad)
	}
	b, _ = os.ReadFile(prom)
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !strings.HasPrefix(l, "#") && !regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? \S+$`).MatchString(l) {
			t.Errorf("exporter text: a sample split over lines: %q", l)
		}
	}

	// --nhc: one line per failure, each a line NHC and Slurm read whole.
	out, _, code := run(t, "doctor", "--root", root, "--nhc")
	js, _, _ := run(t, "doctor", "--root", root, "-o", "json")
	var doc struct {
		Findings []struct{ Outcome string } `json:"findings"`
	}
	json.Unmarshal([]byte(js), &doc)
	fails := 0
	for _, f := range doc.Findings {
		if f.Outcome == "fail" {
			fails++
		}
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != ExitFindings || fails == 0 || len(lines) != fails || rawControl(out, false) != "" {
		t.Errorf("--nhc: exit %d, %d lines for %d failures:\n%s", code, len(lines), fails, out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "ERROR: rdmalab: ") {
			t.Errorf("--nhc: a line not NHC's: %q", l)
		}
	}
}
