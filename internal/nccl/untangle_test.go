package nccl

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// forward is what Open MPI 4.1's --tag-output makes of one chunk a rank's
// daemon forwarded: the tag first, and again after every newline inside
// the chunk but not after its last byte.
func forward(tag string, chunk []byte) []byte {
	var b bytes.Buffer
	b.WriteString(tag)
	for i, c := range chunk {
		b.WriteByte(c)
		if c == '\n' && i < len(chunk)-1 {
			b.WriteString(tag)
		}
	}
	return b.Bytes()
}

// interleave cuts each stream at random byte offsets (as a daemon's read
// of a rank's pipe does on a busy node) and writes the tagged chunks in a
// random order that keeps each stream's own order, as mpirun receives
// them from several daemons.
func interleave(r *rand.Rand, streams map[string][]byte) []byte {
	var tags []string
	chunks := map[string][][]byte{}
	for tag, s := range streams {
		tags = append(tags, tag)
		for len(s) > 0 {
			n := min(len(s), 1+r.IntN(700))
			chunks[tag] = append(chunks[tag], s[:n])
			s = s[n:]
		}
	}
	slices.Sort(tags)
	var out bytes.Buffer
	for len(tags) > 0 {
		i := r.IntN(len(tags))
		tag := tags[i]
		out.Write(forward(tag, chunks[tag][0]))
		if chunks[tag] = chunks[tag][1:]; len(chunks[tag]) == 0 {
			tags = slices.Delete(tags, i, i+1)
		}
	}
	return out.Bytes()
}

// linesOf returns each tag's lines, untagged, in the order they appear.
func linesOf(b []byte) map[string][]string {
	out := map[string][]string{}
	for _, l := range strings.SplitAfter(string(b), "\n") {
		loc := ompiTag().FindStringIndex(l)
		if loc == nil || loc[0] != 0 {
			continue
		}
		out[l[:loc[1]]] = append(out[l[:loc[1]]], l[loc[1]:])
	}
	return out
}

// TestUntangleInterleavedRanks: rank 0 prints a real NCCL_DEBUG trace and
// a real 27-row nccl-tests table while rank 1 prints a real log of a node
// on NET/Socket; mpirun receives their chunks cut anywhere and
// interleaved (a run judged with a row lost and a line given to the
// capture's own hostname, on a loaded machine). Whatever the cut, every
// line of each rank comes back whole and in order, the table has its 27
// rows, and the socket finding names n2 and nobody else.
func TestUntangleInterleavedRanks(t *testing.T) {
	d := testhost.SharedTestdata(t)
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(d, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var trace []byte // its NCCL_DEBUG lines: the capture has a gather_perf table of its own
	for _, l := range strings.SplitAfter(string(read("nccl-debug/nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log")), "\n") {
		if strings.Contains(l, " NCCL INFO ") || strings.Contains(l, " NCCL WARN ") {
			trace = append(trace, l...)
		}
	}
	table := read("nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt")
	socket := read("nccl-debug/nccl-issue-398_aws-2node_P2P-IPC_NET-Socket_excerpt.log")
	streams := map[string][]byte{
		"[1,0]<stdout>:": append(slices.Clone(trace), table...),
		"[1,1]<stdout>:": socket,
		"[1,1]<stderr>:": []byte("warning: a line on stderr\nand another, cut\n"),
	}
	want := map[string][]string{}
	for tag, s := range streams {
		want[tag] = strings.SplitAfter(strings.TrimSuffix(string(s), "\n"), "\n")
		want[tag][len(want[tag])-1] += "\n"
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		log := interleave(r, streams)
		got := linesOf(UntangleMPITags(log))
		for tag := range streams {
			if !slices.Equal(got[tag], want[tag]) {
				t.Fatalf("cut %d: %s lines differ (%d of %d)", i, tag, len(got[tag]), len(want[tag]))
			}
		}
		if again := UntangleMPITags(UntangleMPITags(log)); !bytes.Equal(again, UntangleMPITags(log)) {
			t.Fatalf("cut %d: untangled text does not untangle to itself", i)
		}
		if i%20 != 0 {
			continue
		}
		fs, sum := JudgeRun(log, RunResult{Test: "all_reduce_perf", Nodes: []string{"n1", "n2"}}, JudgeOptions{Hosts: []string{"n1", "n2"}, RanksPerNode: 1, Nodes: 2}, 0)
		if sum == nil || len(sum.Rows) != 27 {
			t.Fatalf("cut %d: table %+v", i, sum)
		}
		socketOn := func(host string) bool {
			return slices.ContainsFunc(fs, func(f check.Finding) bool {
				return f.Check == "nccl.log.socket" && f.Outcome == check.Fail && f.Host == host
			})
		}
		if !socketOn("n2") || socketOn("n1") || slices.ContainsFunc(fs, func(f check.Finding) bool {
			return f.Host != "" && f.Host != "n1" && f.Host != "n2"
		}) {
			t.Fatalf("cut %d:\n%s", i, findingLines(fs))
		}
	}
}

// TestUntangleKeepsWhatIsNotTagged: mpirun's own messages between the
// ranks' chunks pass as they are, a line a killed rank never ended is
// kept (at the end), and text with no tag is returned untouched.
func TestUntangleKeepsWhatIsNotTagged(t *testing.T) {
	in := "mpirun: starting\n[1,0]<stdout>:# size  count [1,1]<stdout>:n2 says hi\n" +
		"-------\nORTE has lost communication\n[1,0]<stdout>: type\n[1,1]<stdout>:cut by the kill"
	want := "mpirun: starting\n[1,1]<stdout>:n2 says hi\n-------\nORTE has lost communication\n" +
		"[1,0]<stdout>:# size  count  type\n[1,1]<stdout>:cut by the kill\n"
	if got := string(UntangleMPITags([]byte(in))); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	plain := []byte("no tags [here]\n")
	if got := UntangleMPITags(plain); &got[0] != &plain[0] {
		t.Fatal("untagged text was copied")
	}
}

func findingLines(fs []check.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", f.Outcome, f.Check, f.Host, f.Message)
	}
	return b.String()
}

// FuzzUntangle: whatever the bytes, untangling ends, untangled text
// untangles to itself, and no byte of a rank's text is lost (the text
// with every tag and newline removed has the same bytes, reordered).
func FuzzUntangle(f *testing.F) {
	f.Add([]byte("[1,0]<stdout>:a[1,1]<stdout>:b\nzz[1,0]<stdout>:c\n"))
	f.Add([]byte("plain\n"))
	f.Add([]byte("[1,0]<stderr>:[1,0]<stdout>:\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		once := UntangleMPITags(b)
		if twice := UntangleMPITags(once); !bytes.Equal(once, twice) {
			t.Fatalf("%q → %q → %q", b, once, twice)
		}
		strip := func(b []byte) []byte {
			s := bytes.ReplaceAll(ompiTag().ReplaceAll(b, nil), []byte("\n"), nil)
			slices.Sort(s)
			return s
		}
		if !bytes.Equal(strip(b), strip(once)) {
			t.Fatalf("bytes changed: %q → %q", b, once)
		}
	})
}
