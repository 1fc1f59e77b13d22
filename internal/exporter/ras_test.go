package exporter

import (
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func rasCapture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "ncclras", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rasScrape scrapes /metrics (text) until it holds want, within a generous
// deadline: the first poll runs in the background.
func rasScrape(t *testing.T, e *Exporter, want string) string {
	t.Helper()
	h, err := e.Handler()
	if err != nil {
		t.Fatal(err)
	}
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		if body = w.Body.String(); strings.Contains(body, want) {
			return body
		}
	}
	t.Fatalf("no %q in the scrape within 30 s:\n%s", want, body)
	return ""
}

func statusCommands(cmds []string) int {
	n := 0
	for _, c := range cmds {
		if strings.HasSuffix(strings.ToUpper(c), "STATUS") {
			n++
		}
	}
	return n
}

// --nccl-ras: each rank's state from a RAS endpoint polled out of band,
// over NCCL's client protocol, from a replay of real ncclras outputs (the
// RAS service runs only inside NCCL processes on GPUs). The docs' JSON
// (NCCL 2.29.1) with rank 1 unresponsive: rank 0 ok, rank 1 missing, each
// with its host; the docs' sleep-fault text report: rank 7 on node1
// behind on AllReduce. Twenty scrapes ask RAS nothing; the exposition
// passes promlint and promtool check metrics.
func TestNCCLRankState(t *testing.T) {
	root := testhost.WriteTree(t, testhost.R730())
	for _, c := range []struct {
		name   string
		replay testhost.RASReport
		want   []string
	}{
		{"json-missing", testhost.RASReport{JSON: true, Body: rasCapture(t, "nccl-docs-ras-rst_ncclras-f-json_2.29.1_1-of-2-ranks-missing-unresponsive_rst-indented-2-spaces.json")}, []string{
			`rdmalab_nccl_rank_state{comm="0xae94423cfbb2ef4a",host="172.16.64.245",rank="0",state="ok"} 1`,
			`rdmalab_nccl_rank_state{comm="0xae94423cfbb2ef4a",host="172.16.64.245",rank="1",state="missing"} 1`,
		}},
		{"text-straggler", testhost.RASReport{Body: rasCapture(t, "nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt")}, []string{
			`rdmalab_nccl_rank_state{comm="78db921d1c117b4a",host="node1",rank="7",state="behind"} 1`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr, cmds := testhost.RASReplay(t, c.replay)
			e := newExporter(t, Options{Root: root, NoFindings: true, NCCLRAS: addr, NCCLRASInterval: time.Hour, NCCLRASTimeout: 10 * time.Second})
			body := rasScrape(t, e, "rdmalab_nccl_ras_up 1")
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("no %s in:\n%s", w, grepLines(body, "rdmalab_nccl"))
				}
			}
			if !strings.Contains(body, "rdmalab_nccl_ras_last_success_timestamp_seconds ") || !strings.Contains(body, "rdmalab_nccl_ras_polled_timestamp_seconds ") {
				t.Errorf("no poll timestamps:\n%s", grepLines(body, "rdmalab_nccl"))
			}
			for range 20 {
				rasScrape(t, e, "rdmalab_nccl_ras_up 1")
			}
			if n := statusCommands(cmds()); n != 1 {
				t.Errorf("RAS was asked for %d reports in 21 scrapes with an hour's interval: a scrape polled it (%q)", n, cmds())
			}
			if c.replay.JSON && !strings.Contains(strings.Join(cmds(), "\n"), "SET FORMAT json") {
				t.Errorf("the JSON report was not asked for: %q", cmds())
			}
			lint(t, body)
		})
	}
}

// An endpoint that accepts and never answers (a hung node, a firewall)
// is rdmalab_nccl_ras_up 0 within the poll's timeout, with no rank states
// and the collector still a success: nothing of a job is known, and the
// rest of the exporter goes on.
func TestNCCLRASDown(t *testing.T) {
	root := testhost.WriteTree(t, testhost.R730())
	addr, _ := testhost.RASReplay(t, testhost.RASReport{Silent: true})
	start := time.Now()
	e := newExporter(t, Options{Root: root, NoFindings: true, NCCLRAS: addr, NCCLRASInterval: time.Hour, NCCLRASTimeout: 300 * time.Millisecond})
	body := rasScrape(t, e, "rdmalab_nccl_ras_up 0")
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the poll took %v despite its 300 ms timeout", took)
	}
	if strings.Contains(body, "rdmalab_nccl_rank_state{") || strings.Contains(body, "rdmalab_nccl_ras_last_success_timestamp_seconds ") {
		t.Errorf("rank states or a success served without an answer:\n%s", grepLines(body, "rdmalab_nccl"))
	}
	if !strings.Contains(body, `rdmalab_scrape_collector_success{collector="nccl_ras"} 1`) || !strings.Contains(body, "rdmalab_infiniband_") {
		t.Errorf("a silent RAS endpoint failed the collector or the host's metrics:\n%s", grepLines(body, "collector_success"))
	}
	lint(t, body)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// --textfile --nccl-ras waits for the first RAS poll (bounded by its
// timeout), so the file holds the ranks' states.
func TestNCCLRASTextfile(t *testing.T) {
	root := testhost.WriteTree(t, testhost.R730())
	addr, _ := testhost.RASReplay(t, testhost.RASReport{JSON: true, Body: rasCapture(t, "nccl-docs-ras-rst_ncclras-f-json_2.29.1_1-of-2-ranks-missing-unresponsive_rst-indented-2-spaces.json")})
	e := newExporter(t, Options{Root: root, NoFindings: true, NCCLRAS: addr, NCCLRASInterval: time.Hour, NCCLRASTimeout: 10 * time.Second})
	file := filepath.Join(t.TempDir(), "rdmalab.prom")
	if err := e.WriteTextfile(file); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `rdmalab_nccl_rank_state{comm="0xae94423cfbb2ef4a",host="172.16.64.245",rank="1",state="missing"} 1`) || !strings.Contains(string(b), "rdmalab_nccl_ras_up 1") {
		t.Errorf("the textfile lacks the RAS poll:\n%s", grepLines(string(b), "nccl"))
	}
	lint(t, string(b))
}

// Every ncclras capture's ranks as rdmalab_nccl_rank_state gives them:
// the states each shows on the right rank and host. A text report names
// only its outliers: the healthy 2.30.7 report names no rank, and issue
// 1911's names the two ranks ahead (the 30 behind are unnamed).
func TestRankStatesOfEveryCapture(t *testing.T) {
	for file, want := range map[string]map[rankKey]rankState{
		"nccl-docs-example-08_ras_exit-fault_rank7_INCOMPLETE_communicators-section-only_masked.txt":               {{"1bdb83b038775869", 7}: {"node1", RankMissing}},
		"nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt": {{"78db921d1c117b4a", 7}: {"node1", RankBehind}},
		"nccl-docs-ras-rst_ncclras-f-json_2.29.1_1-of-2-ranks-missing-unresponsive_rst-indented-2-spaces.json":     {{"0xae94423cfbb2ef4a", 0}: {"172.16.64.245", RankOK}, {"0xae94423cfbb2ef4a", 1}: {"172.16.64.245", RankMissing}},
		"nccl-issue-1911_2.26.2_4node-32rank_MISMATCH-AllGather-640-vs-641_two-ranks-ahead.txt":                    {{"fa93daea854b060b", 12}: {"10.137.190.124", RankOK}, {"fa93daea854b060b", 13}: {"10.137.190.124", RankOK}},
		"ray-test-nv-hang-detector_HEALTHY_RAS_JSON_2.28.9_1node-2rank_empty-missing-ranks-array.json":             {{"0x514e98cf4e44862b", 0}: {"10.0.77.184", RankOK}, {"0x514e98cf4e44862b", 1}: {"10.0.77.184", RankOK}},
		"nccl-docs-example-08_ras_ncclras-v_2.30.7_2node-8rank_healthy-RUNNING-OK_masked.txt":                      {},
	} {
		r, err := nccl.ParseRAS([]byte(rasCapture(t, file)))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if got := rankStates(r); !maps.Equal(got, want) {
			t.Errorf("%s: %v, want %v", file, got, want)
		}
	}
}
