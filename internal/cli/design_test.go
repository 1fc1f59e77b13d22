package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
)

func TestDesignCommands(t *testing.T) {
	out, errOut, code := run(t, "design", "transfer", "--size", "280GB", "--rate", "25GbE")
	if code != ExitOK || !strings.Contains(out, "89.6 s") || !strings.Contains(out, "280 GB × 8 / 25 Gb/s") {
		t.Errorf("transfer: exit %d %s\n%s", code, errOut, out)
	}
	js, _, code := run(t, "design", "uplink", "--profile", "image-video", "-o", "json")
	payload, err := envelope.Payload([]byte(js), envelope.Design)
	var u struct {
		Calculator  string `json:"calculator"`
		Recommended struct {
			Name string `json:"name"`
		} `json:"recommended"`
	}
	if code != ExitOK || err != nil || json.Unmarshal(payload, &u) != nil || u.Calculator != "uplink" || u.Recommended.Name != "1× 200 GbE" {
		t.Errorf("uplink json: exit %d, %v, %+v\n%s", code, err, u, js)
	}
	plan := filepath.Join(t.TempDir(), "cabling.yaml")
	out, _, code = run(t, "design", "fabric", "--hosts", "2048", "--radix", "64", "--rate", "4X NDR", "--plan", plan)
	if code != ExitOK || !strings.Contains(out, "64 leaves + 32 spines") {
		t.Errorf("fabric: exit %d\n%s", code, out)
	}
	if top, err := fabric.LoadTopology(plan); err != nil || len(top.Links) != 4096 {
		t.Errorf("--plan: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "frr")
	out, _, code = run(t, "design", "frr", "--spines", "2", "--leaves", "4", "--dir", dir)
	entries, _ := os.ReadDir(dir)
	if code != ExitOK || len(entries) != 6 || !strings.Contains(out, "Wrote 6 files") {
		t.Errorf("frr: exit %d, %d files\n%s", code, len(entries), out)
	}
}

// Bad input exits 2 with one line naming the flag.
func TestDesignBadInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"design", "transfer", "--size", "280", "--rate", "25GbE"}, "--size"},
		{[]string{"design", "transfer", "--size", "0GB", "--rate", "25GbE"}, "--size"},
		{[]string{"design", "transfer", "--size", "280GB", "--rate", "-25"}, "--rate"},
		{[]string{"design", "transfer", "--rate", "25GbE"}, "size"},
		{[]string{"design", "uplink"}, "--profile"},
		{[]string{"design", "fabric", "--hosts", "10", "--radix", "7"}, "--radix"},
		{[]string{"design", "frr", "--dir", filepath.Join(file, "sub")}, "--dir"},
		{[]string{"design", "frr", "--dir", t.TempDir(), "--leaf-name", "../x"}, "--leaf-name"},
		{[]string{"design", "frr", "--dir", t.TempDir(), "--spine-asn", "3320"}, "--spine-asn"},
		{[]string{"design"}, "subcommand"},
	} {
		out, errOut, code := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 1 || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 naming %s", c.args, code, errOut, out, c.want)
		}
	}
}
