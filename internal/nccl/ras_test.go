package nccl

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

const (
	rasHealthyText = "ncclras/nccl-docs-example-08_ras_ncclras-v_2.30.7_2node-8rank_healthy-RUNNING-OK_masked.txt"
	rasExitFault   = "ncclras/nccl-docs-example-08_ras_exit-fault_rank7_INCOMPLETE_communicators-section-only_masked.txt"
	rasSleepFault  = "ncclras/nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt"
	rasRSTJSON     = "ncclras/nccl-docs-ras-rst_ncclras-f-json_2.29.1_1-of-2-ranks-missing-unresponsive_rst-indented-2-spaces.json"
	rasIssue1911   = "ncclras/nccl-issue-1911_2.26.2_4node-32rank_MISMATCH-AllGather-640-vs-641_two-ranks-ahead.txt"
	rasRayHealthy  = "ncclras/ray-test-nv-hang-detector_HEALTHY_RAS_JSON_2.28.9_1node-2rank_empty-missing-ranks-array.json"
)

// Every ncclras capture, through nccl judge's entry: what it shows on the
// right rank and host, and the healthy twins pass.
func TestRASEveryCapture(t *testing.T) {
	cases := map[string][]want{
		rasHealthyText: {
			{"nccl.ras.ranks", check.Pass, "", "communicators", "every rank of 1 communicator(s) answered RAS (8 ranks)"},
			{"nccl.ras.progress", check.Pass, "", "communicators", "no collective-count mismatch"},
			{"nccl.ras.status", check.Pass, "", "communicators", "(RUNNING)"}},
		rasExitFault: {
			{"nccl.ras.ranks", check.Fail, "node1", "rank 7", "rank 7 (GPU 3, PID 3748990 on node1) of communicator #0-0 (1bdb83b038775869) sent RAS no data (INCOMPLETE"}},
		rasSleepFault: {
			{"nccl.ras.progress", check.Unknown, "node1", "#0-0 (78db921d1c117b4a) AllReduce", "rank 7 (GPU 3, PID 1650386 on node1) at AllReduce #60, while 7 rank(s) reached AllReduce #64: lagging rank(s) — one poll is not a verdict"},
			{"nccl.ras.ranks", check.Pass, "", "communicators", "8 ranks"}},
		rasRSTJSON: {
			{"nccl.ras.ranks", check.Fail, "172.16.64.245", "rank 1", "rank 1 (GPU 1, PID 1524345 on 172.16.64.245) of communicator 0xae94423cfbb2ef4a sent RAS no data"}},
		rasIssue1911: {
			{"nccl.ras.progress", check.Unknown, "", "#0-0 (fa93daea854b060b) AllGather", "30 rank(s) at AllGather #640 (not named by RAS), while 2 rank(s) reached AllGather #641 (RAS names the minority, here the ranks ahead: rank 12 (GPU 4, PID 323032 on 10.137.190.124), rank 13 (GPU 5, PID 323033 on 10.137.190.124))"}},
		rasRayHealthy: {
			{"nccl.ras.ranks", check.Pass, "", "communicators", "(2 ranks)"},
			{"nccl.ras.progress", check.Pass, "", "communicators", "no collective-count mismatch"},
			{"nccl.ras.status", check.Pass, "", "communicators", "no communicator in error"}},
	}
	base := testhost.SharedTestdata(t)
	all, _ := filepath.Glob(filepath.Join(base, "ncclras", "*"))
	for _, p := range all {
		rel, _ := filepath.Rel(base, p)
		if _, ok := cases[rel]; !ok {
			t.Errorf("%s has no case", rel)
		}
	}
	for rel, wants := range cases {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			b := []byte(capture(t, rel))
			if !SniffRAS(b) || Sniff(b) {
				t.Fatalf("sniffed RAS %v, nccl-tests %v", SniffRAS(b), Sniff(b))
			}
			fs, payload, err := JudgeFile(rel, b, JudgeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := payload.(*RASReport); !ok {
				t.Fatalf("payload %T", payload)
			}
			for _, w := range wants {
				has(t, fs, w.check, w.outcome, w.host, w.subject, w.reason)
			}
			healthy := !strings.Contains(rel, "fault") && !strings.Contains(rel, "missing") && !strings.Contains(rel, "MISMATCH")
			for _, f := range fs {
				fixed(t, f)
				if healthy && f.Outcome != check.Pass {
					t.Errorf("healthy capture: %s %s %s", f.Outcome, f.Check, f.Message)
				}
			}
		})
	}
}

// The model of the JSON captures: the job's ranks with host, PID, GPU,
// state and counts, whatever the indentation.
func TestRASJSONModel(t *testing.T) {
	r, err := ParseRAS([]byte(capture(t, rasRSTJSON)))
	if err != nil {
		t.Fatal(err)
	}
	c := r.Comms[0]
	if r.NCCLVersion != "2.29.1" || len(c.Ranks) != 1 || len(c.Missing) != 1 || c.Size != 2 || c.Hash != "0xae94423cfbb2ef4a" {
		t.Fatalf("%+v", r)
	}
	m := c.Missing[0]
	if m.Rank != 1 || m.Host != "172.16.64.245" || m.PID != 1524345 || *m.CUDADev != 1 || !m.Unresponsive || m.Dead {
		t.Errorf("%+v", m)
	}
	if k := c.Ranks[0]; k.Counts["AllReduce"] != 0 || k.InitState != 0 || k.PID != 1524344 {
		t.Errorf("%+v", k)
	}
	r, _ = ParseRAS([]byte(capture(t, rasRayHealthy)))
	if len(r.Comms[0].Ranks) != 2 || r.Comms[0].Ranks[1].Counts["AllReduce"] != 2 || len(r.Comms[0].Missing) != 0 || len(r.Repairs) != 0 {
		t.Errorf("%+v", r.Comms[0])
	}
}

// NCCL 2.28.x wrote a missing rank without the comma between nvml_dev and
// status (ray's DEAD_RANK sample reproduces it); the documented sample
// with that comma taken out, as the 2.28 writer left it, is read with
// the repair named, and judged like the valid one.
func TestRASMissingCommaRepair(t *testing.T) {
	valid := capture(t, rasRSTJSON)
	const withComma = "\"nvml_dev\": 1,\n            \"status\""
	if !strings.Contains(valid, withComma) {
		t.Fatal("the sample changed")
	}
	broken := strings.Replace(valid, withComma, "\"nvml_dev\": 1\n            \"status\"", 1)
	fs, payload, err := JudgeFile("ras-2.28.json", []byte(broken), JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := payload.(*RASReport); len(r.Repairs) != 1 || !strings.Contains(r.Repairs[0], "line(s) 43") {
		t.Errorf("repairs %q", r.Repairs)
	}
	has(t, fs, "nccl.ras.read", check.Warn, "", "ncclras JSON", "NCCL 2.28.x missing-comma repair")
	has(t, fs, "nccl.ras.ranks", check.Fail, "172.16.64.245", "rank 1", "PID 1524345")
	// anything else broken is refused, naming the file
	if _, _, err := JudgeFile("bad.json", []byte(strings.Replace(valid, `"size": 2,`, `"size": 2,,`, 1)), JudgeOptions{}); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("err %v", err)
	}
}

// A report behind a prompt, with CRLF line ends, read the same.
func TestRASPastedWithPromptCRLF(t *testing.T) {
	b := "user@node0:~$ ncclras -f json\r\n" + strings.ReplaceAll(capture(t, rasRayHealthy), "\n", "\r\n")
	r, err := ParseRAS([]byte(b))
	if err != nil || len(r.Comms[0].Ranks) != 2 {
		t.Fatalf("%v %+v", err, r)
	}
	b = strings.ReplaceAll(capture(t, rasSleepFault), "\n", "\r\n")
	fs := JudgeRAS("x", mustRAS(t, b), nil)
	has(t, fs, "nccl.ras.progress", check.Unknown, "node1", "#0-0 (78db921d1c117b4a) AllReduce", "rank 7")
}

func mustRAS(t *testing.T, s string) *RASReport {
	t.Helper()
	r, err := ParseRAS([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// the text model of the 1911 capture: 32 ranks over 4 nodes, the two
// ranks ahead named with their host
func TestRASTextModel(t *testing.T) {
	r := mustRAS(t, capture(t, rasIssue1911))
	if r.Job == nil || r.Job.Nodes != 4 || r.Job.GPUs != 32 || r.NCCLVersion != "2.26.2" {
		t.Fatalf("%+v", r.Job)
	}
	c := r.Comms[0]
	if c.Size != 32 || c.Status != "RUNNING" || c.Hash != "fa93daea854b060b" || len(c.Mismatches) != 1 {
		t.Fatalf("%+v", c)
	}
	m := c.Mismatches[0]
	if m.Op != "AllGather" || m.Max() != 641 || len(m.Groups) != 2 || len(m.Groups[1].Members) != 2 || m.Groups[1].Members[1].Host != "10.137.190.124" || m.Groups[1].Members[1].PID != 323033 {
		t.Errorf("%+v", m)
	}
}
