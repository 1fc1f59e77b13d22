package resultslog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Record stands for a tool's record: bench's direction, nccl's run.
type Record struct {
	From   string  `json:"from"`
	To     string  `json:"to"`
	Engine string  `json:"engine"`
	Test   string  `json:"test"`
	Gbps   float64 `json:"gbps"`
}

var kind = Kind[Record]{Format: "rdmalab-test-results", Version: 1, Tool: "test",
	Valid: func(r Record) bool { return r.From != "" && r.To != "" && r.Engine != "" && r.Test != "" }}

// The results log: never truncated unless asked, never the cluster file
// or another kind of file, bound to its cluster, torn tail cut.
func TestResultsLogSafety(t *testing.T) {
	dir := t.TempDir()
	clusterFile := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(clusterFile, []byte("nodes: []\n"), 0o644)
	path := filepath.Join(dir, "r.jsonl")
	l, _, err := kind.Open(path, Target{ClusterFile: clusterFile, Cluster: "fp1", Nodes: 2, Mode: Create})
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{From: "a", To: "b", Engine: "tcp", Test: "bw", Gbps: 9}
	if err := l.Append(rec); err != nil {
		t.Fatal(err)
	}
	l.Close()
	before, _ := os.ReadFile(path)
	for _, c := range []struct {
		path, fp string
		mode     Mode
		want     string
	}{
		{path, "fp1", Create, "--resume continues it, --overwrite replaces it"},
		{path, "fp2", Resume, "measured on another cluster"},
		{clusterFile, "fp1", Overwrite, "it is the cluster file"},
		{clusterFile, "fp1", Resume, "it is the cluster file"},
	} {
		if _, _, err := kind.Open(c.path, Target{ClusterFile: clusterFile, Cluster: c.fp, Nodes: 2, Mode: c.mode}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %d: %v, want %q", c.path, c.mode, err, c.want)
		}
	}
	other := filepath.Join(dir, "notes.txt")
	os.WriteFile(other, []byte("my notes\n"), 0o644)
	if _, _, err := kind.Open(other, Target{ClusterFile: clusterFile, Cluster: "fp1", Nodes: 2, Mode: Overwrite}); err == nil || !strings.Contains(err.Error(), "not an rdmalab test results log") {
		t.Errorf("overwrote a file that is not a results log: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a refused open changed the file")
	}
	if b, _ := os.ReadFile(other); string(b) != "my notes\n" {
		t.Error("changed notes.txt")
	}
	// A torn last line is refused by name, never skipped in silence; the
	// file stays as it is.
	torn := append(before, []byte(`{"from":"a","to":"c","eng`)...)
	os.WriteFile(path, torn, 0o644)
	if _, _, err := kind.Open(path, Target{ClusterFile: clusterFile, Cluster: "fp1", Nodes: 2, Mode: Resume}); err == nil || !strings.Contains(err.Error(), "line 3 is not a complete result") {
		t.Errorf("resumed a log with a torn line: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(torn) {
		t.Error("a refused resume changed the file")
	}
	// Blank lines after the last record are no loss: resume, one record a line.
	os.WriteFile(path, append(before, "\n\n"...), 0o644)
	l, prior, err := kind.Open(path, Target{ClusterFile: clusterFile, Cluster: "fp1", Nodes: 2, Mode: Resume})
	if err != nil || len(prior) != 1 {
		t.Fatalf("%v %v", prior, err)
	}
	l.Append(Record{From: "b", To: "a", Engine: "tcp", Test: "bw", Gbps: 8})
	// A second opener, in any mode, is refused while the first holds it.
	for _, m := range []Mode{Create, Resume, Overwrite} {
		if _, _, err := kind.Open(path, Target{ClusterFile: clusterFile, Cluster: "fp1", Nodes: 2, Mode: m}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("in use by process %d", os.Getpid())) {
			t.Errorf("mode %d: a second open of a held log: %v", m, err)
		}
	}
	l.Close()
	b, _ := os.ReadFile(path)
	if _, recs, valid, err := kind.Parse(b); err != nil || len(recs) != 2 || valid != len(b) {
		t.Errorf("after resuming: %v %v\n%s", recs, err, b)
	}
}

// Whatever tail a crash or a stray editor leaves, opening for resume
// and appending never loses or alters a complete record: either the
// open is refused and the file unchanged, or every record survives.
func FuzzResultsLogTail(f *testing.F) {
	f.Add(uint8(3), []byte(`{"from":"a","to":"b","eng`))
	f.Add(uint8(2), []byte("garbage\n"))
	f.Add(uint8(1), []byte("garbage\n{\"from\":\"x\",\"to\":\"y\",\"engine\":\"tcp\",\"test\":\"bw\"}\n"))
	f.Add(uint8(0), []byte("\n\n"))
	f.Fuzz(func(t *testing.T, n uint8, tail []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "r.jsonl")
		l, _, err := kind.Open(path, Target{ClusterFile: filepath.Join(dir, "none.yaml"), Cluster: "fp", Nodes: 2, Mode: Create})
		if err != nil {
			t.Fatal(err)
		}
		var want []Record
		for i := range int(n % 8) {
			r := Record{From: fmt.Sprint("n", i), To: "z", Engine: "tcp", Test: "bw", Gbps: float64(i)}
			want = append(want, r)
			if err := l.Append(r); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		good, _ := os.ReadFile(path)
		os.WriteFile(path, append(slices.Clone(good), tail...), 0o644)
		before, _ := os.ReadFile(path)
		l, prior, err := kind.Open(path, Target{ClusterFile: filepath.Join(dir, "none.yaml"), Cluster: "fp", Nodes: 2, Mode: Resume})
		if err != nil {
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatal("a refused open changed the file")
			}
			return
		}
		extra := Record{From: "new", To: "z", Engine: "tcp", Test: "bw", Gbps: 1}
		if err := l.Append(extra); err != nil {
			t.Fatal(err)
		}
		l.Close()
		b, _ := os.ReadFile(path)
		_, got, _, err := kind.Parse(b)
		if err != nil {
			t.Fatalf("the file no longer reads: %v\n%q", err, b)
		}
		if len(got) < len(want)+1 || len(prior) < len(want) {
			t.Fatalf("lost records: had %d, prior %d, now %d\n%q", len(want), len(prior), len(got), b)
		}
		for i, w := range want {
			if got[i].From != w.From || got[i].Gbps != w.Gbps {
				t.Fatalf("record %d altered: %+v want %+v", i, got[i], w)
			}
		}
		if last := got[len(got)-1]; last.From != "new" {
			t.Fatalf("the appended record is not last: %+v", last)
		}
	})
}
