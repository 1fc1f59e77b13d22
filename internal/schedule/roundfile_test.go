package schedule

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestRoundFilesRoundTripTheCoverSchedule(t *testing.T) {
	f := smallFabric(t, "fattree-2x4x4-ftree.opensm-lfts.dump")
	p := f.Paths()
	byName := make([]int, p.N)
	for i := range byName {
		byName[i] = i
	}
	for _, rounds := range [][][]IPair{CoverRounds(p).Rounds, Circle(byName)} {
		s := Named(f, rounds)
		for _, format := range []Format{SuperBench, ClusterKit} {
			var buf bytes.Buffer
			if err := WriteRounds(&buf, s, format); err != nil {
				t.Fatal(err)
			}
			back, err := ReadRounds(&buf, format, s.Nodes)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, s) {
				t.Fatalf("%s: read back differs:\n%+v\n%+v", format, back, s)
			}
		}
	}
}

func TestReadRoundsExamples(t *testing.T) {
	nodes := []string{"n0", "n1", "n2", "n3"}
	s, err := ReadRounds(strings.NewReader("0,1;2,3\n0,2;1,3\n\n0,3\n"), SuperBench, nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Pair{{{"n0", "n1"}, {"n2", "n3"}}, {{"n0", "n2"}, {"n1", "n3"}}, {{"n0", "n3"}}}
	if !reflect.DeepEqual(s.Rounds, want) {
		t.Fatalf("superbench: %+v", s.Rounds)
	}
	// ClusterKit: rounds in ascending order whatever the line order
	s, err = ReadRounds(strings.NewReader("# comment\n2 n0 n3\n1 n0 n2\n1 n1 n3\n0 n0 n1\n0 n2 n3\n"), ClusterKit, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Rounds, want) || !reflect.DeepEqual(s.Nodes, []string{"n0", "n1", "n2", "n3"}) {
		t.Fatalf("clusterkit: %+v %v", s.Rounds, s.Nodes)
	}
}

func TestReadRoundsRejects(t *testing.T) {
	nodes := []string{"n0", "n1", "n2", "n3"}
	for _, tc := range []struct {
		format     Format
		text, want string
		nodesGiven bool
	}{
		{SuperBench, "0,1;1,2\n", "line 1: host 2 is in two pairs", true},
		{SuperBench, "0,4\n", "host index 4 outside the 4 hosts", true},
		{SuperBench, "0-1\n", "is not i,j", true},
		{SuperBench, "0,0\n", "two pairs of one round", true},
		{SuperBench, "0,1\n", "give the nodes", false},
		{ClusterKit, "0 n0 n1\n0 n1 n2\n", "line 2: node \"n1\" is in two pairs of round 0", true},
		{ClusterKit, "0 n0 n9\n", "not one of the 4 nodes", true},
		{ClusterKit, "x n0 n1\n", "is not a number", true},
		{ClusterKit, "0 n0\n", "want <round> <node1> <node2>", true},
		{ClusterKit, "0 n0 n0\n", "paired with itself", false},
	} {
		var given []string
		if tc.nodesGiven {
			given = nodes
		}
		_, err := ReadRounds(strings.NewReader(tc.text), tc.format, given)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: err = %v, want %q", tc.format, tc.text, err, tc.want)
		}
	}
}

func TestWriteRoundsRefusesWhatTheFormatCannotCarry(t *testing.T) {
	s := &Schedule{Nodes: []string{"gpu01 HCA-1", "gpu02 HCA-1"}, Rounds: [][]Pair{{{"gpu01 HCA-1", "gpu02 HCA-1"}}}}
	if err := WriteRounds(&bytes.Buffer{}, s, ClusterKit); err == nil || !strings.Contains(err.Error(), "white space") {
		t.Errorf("err = %v", err)
	}
	var buf bytes.Buffer
	if err := WriteRounds(&buf, s, SuperBench); err != nil || buf.String() != "0,1\n" {
		t.Errorf("superbench: %q %v", buf.String(), err)
	}
	empty := &Schedule{Nodes: []string{"a", "b"}, Rounds: [][]Pair{{}}}
	for _, f := range []Format{SuperBench, ClusterKit} {
		if err := WriteRounds(&bytes.Buffer{}, empty, f); err == nil {
			t.Errorf("%s: an empty round was written", f)
		}
	}
}

// Whatever a parser accepts, writing it and reading it back gives the same
// schedule, and no pair is lost on the way.
func FuzzRoundFiles(f *testing.F) {
	f.Add("0,1;2,3\n0,2;1,3\n", "superbench")
	f.Add("0 n0 n1\n0 n2 n3\n1 n0 n2\n", "clusterkit")
	f.Add("# c\n7 a b\n3 b c\n", "clusterkit")
	f.Fuzz(func(t *testing.T, text, format string) {
		fm, err := ParseFormat(format)
		if err != nil {
			return
		}
		nodes := []string{"n0", "n1", "n2", "n3", "n4", "n5"}
		var given []string
		if fm == SuperBench {
			given = nodes
		}
		s, err := ReadRounds(strings.NewReader(text), fm, given)
		if err != nil {
			return
		}
		pairs := 0
		for _, r := range s.Rounds {
			pairs += len(r)
		}
		var buf bytes.Buffer
		if err := WriteRounds(&buf, s, fm); err != nil {
			t.Fatalf("write what was read: %v", err)
		}
		back, err := ReadRounds(bytes.NewReader(buf.Bytes()), fm, s.Nodes)
		if err != nil {
			t.Fatalf("re-read: %v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip changed the schedule:\n%+v\n%+v", s, back)
		}
		n := 0
		for _, line := range strings.Split(buf.String(), "\n") {
			if line == "" {
				continue
			}
			if fm == SuperBench {
				n += strings.Count(line, ";") + 1
			} else {
				n++
			}
		}
		if n != pairs {
			t.Fatalf("%d pairs read, %d written", pairs, n)
		}
	})
}
