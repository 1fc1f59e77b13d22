package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// verdictFixtures writes one host snapshot per outcome, all from the real
// r730-qdr example: as recorded (healthy), its one port DOWN/Disabled
// after it carried data (failed), its port state unreadable (unproven).
func verdictFixtures(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../examples/r730-qdr.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := map[string]string{}
	for status, edit := range map[string]func(port map[string]any){
		"healthy": func(map[string]any) {},
		"failed": func(p map[string]any) {
			p["state"], p["state_id"], p["phys_state"], p["phys_state_id"] = "DOWN", 1, "Disabled", 3
		},
		"unproven": func(p map[string]any) {
			for _, k := range []string{"state", "state_id", "phys_state", "phys_state_id"} {
				delete(p, k)
			}
		},
	} {
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		port := doc["payload"].(map[string]any)["rdma_devices"].([]any)[0].(map[string]any)["ports"].([]any)[0].(map[string]any)
		edit(port)
		js, _ := json.Marshal(doc)
		p := filepath.Join(dir, status+".json")
		if err := os.WriteFile(p, js, 0o644); err != nil {
			t.Fatal(err)
		}
		out[status] = p
	}
	return out
}

// One verdict everywhere: one fixture per outcome rendered through doctor
// (text, JSON, the NHC line) and report (text, HTML) says the same status
// in each, and every one exits 0, 1 or 3 alike. (report -o json is the
// registry helper's; the lead adds it here at merge.)
func TestOneVerdictEverywhere(t *testing.T) {
	fixtures := verdictFixtures(t)
	for _, c := range []struct {
		status      string
		code        int
		doctorWord  string // doctor's last line
		nhcPrefix   string // "" : silent
		reportWord  string // report's first line
		htmlClass   string // the page's verdict section
		htmlHeading string
	}{
		{"healthy", ExitOK, "verdict: HEALTHY", "", "READY:", "ready", "✓ Ready"},
		{"failed", ExitFindings, "verdict: FAILED", "ERROR: rdmalab: port.state: columbia.lab mlx5_0 port 1", "NOT READY:", "not-ready", "✗ Not ready"},
		{"unproven", ExitUnproven, "verdict: UNPROVEN", "UNPROVEN: rdmalab:", "UNPROVEN:", "unproven", "? Unproven"},
	} {
		t.Run(c.status, func(t *testing.T) {
			snap := fixtures[c.status]
			out, _, code := run(t, "doctor", "--snapshot", snap)
			// The verdict line, and what would answer it under it.
			verdict := out[strings.LastIndex(out, "\nverdict: ")+1:]
			if code != c.code || !strings.HasPrefix(verdict, c.doctorWord) {
				t.Errorf("doctor: exit %d, %q; want %d %q", code, verdict, c.code, c.doctorWord)
			}
			js, _, code := run(t, "doctor", "--snapshot", snap, "-o", "json")
			var doc struct {
				Verdict struct{ Status string } `json:"verdict"`
			}
			if err := json.Unmarshal([]byte(js), &doc); err != nil || code != c.code || doc.Verdict.Status != c.status {
				t.Errorf("doctor -o json: exit %d, verdict %q (%v); want %d %q", code, doc.Verdict.Status, err, c.code, c.status)
			}
			nhc, _, code := run(t, "doctor", "--snapshot", snap, "--nhc")
			if code != c.code || (c.nhcPrefix == "") != (strings.TrimSpace(nhc) == "") || !strings.HasPrefix(nhc, c.nhcPrefix) {
				t.Errorf("doctor --nhc: exit %d, %q; want %d %q", code, nhc, c.code, c.nhcPrefix)
			}
			html := filepath.Join(t.TempDir(), "r.html")
			text, _, code := run(t, "report", "--html", html, snap)
			if code != c.code || !strings.HasPrefix(text, c.reportWord) {
				t.Errorf("report: exit %d, %q; want %d %q", code, strings.SplitN(text, "\n", 2)[0], c.code, c.reportWord)
			}
			page, err := os.ReadFile(html)
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`<section class="verdict ([a-z-]+)"[^>]*>\s*<div class="state">([^<]*)</div>`).FindStringSubmatch(string(page))
			if m == nil || m[1] != c.htmlClass || m[2] != c.htmlHeading {
				t.Errorf("report HTML verdict %q; want %q %q", m, c.htmlClass, c.htmlHeading)
			}
		})
	}
}
