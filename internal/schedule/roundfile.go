package schedule

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Format is a round file's dialect.
type Format string

const (
	// SuperBench is one round per line, pairs of host indices (into the
	// host list, in order) as `i,j` separated by `;`: `0,1;2,3`.
	SuperBench Format = "superbench"
	// ClusterKit is one pair per line, `<round> <node1> <node2>`, by name
	// (ClusterKit's --fromfile). Rounds are numbered from 0 when written;
	// any numbers are read, in ascending order.
	ClusterKit Format = "clusterkit"
)

// ParseFormat reads a --rounds-format value.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case SuperBench, ClusterKit:
		return Format(s), nil
	}
	return "", fmt.Errorf("round file format %q: want superbench or clusterkit", s)
}

// RoundFileError names the line a round file is wrong on.
type RoundFileError struct {
	Format Format
	Line   int
	Text   string
	Msg    string
}

func (e *RoundFileError) Error() string {
	return fmt.Sprintf("%s round file line %d: %s: %q", e.Format, e.Line, e.Msg, e.Text)
}

// ReadRounds reads a round file. SuperBench's indices need the host list
// they index (nodes, in order); ClusterKit's names are checked against
// nodes when nodes is given. Blank lines and # comments are skipped. A node
// twice in one round, a node paired with itself or an unknown node is an
// error naming the line.
func ReadRounds(r io.Reader, format Format, nodes []string) (*Schedule, error) {
	known := map[string]bool{}
	for _, n := range nodes {
		known[n] = true
	}
	s := &Schedule{Nodes: slices.Clone(nodes)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20) // a SuperBench line holds a whole round
	type numbered struct {
		round int
		pair  Pair
		line  int
		text  string
	}
	var ck []numbered
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(msg string, a ...any) error {
			return &RoundFileError{format, n, line, fmt.Sprintf(msg, a...)}
		}
		switch format {
		case SuperBench:
			if nodes == nil {
				return nil, fmt.Errorf("a SuperBench round file indexes a host list: give the nodes")
			}
			var round []Pair
			inRound := map[int]bool{}
			for _, tok := range strings.Split(line, ";") {
				a, b, ok := strings.Cut(strings.TrimSpace(tok), ",")
				if !ok {
					return nil, bad("pair %q is not i,j", tok)
				}
				i, errA := strconv.Atoi(strings.TrimSpace(a))
				j, errB := strconv.Atoi(strings.TrimSpace(b))
				if errA != nil || errB != nil {
					return nil, bad("pair %q is not two host indices", tok)
				}
				for _, x := range []int{i, j} {
					if x < 0 || x >= len(nodes) {
						return nil, bad("host index %d outside the %d hosts", x, len(nodes))
					}
				}
				if i == j || inRound[i] || inRound[j] {
					return nil, bad("host %d is in two pairs of one round", max(i, j))
				}
				inRound[i], inRound[j] = true, true
				round = append(round, Pair{nodes[i], nodes[j]})
			}
			s.Rounds = append(s.Rounds, round)
		case ClusterKit:
			f := strings.Fields(line)
			if len(f) != 3 {
				return nil, bad("want <round> <node1> <node2>")
			}
			rn, err := strconv.Atoi(f[0])
			if err != nil || rn < 0 {
				return nil, bad("round %q is not a number", f[0])
			}
			for _, x := range f[1:] {
				if nodes != nil && !known[x] {
					return nil, bad("node %q is not one of the %d nodes", x, len(nodes))
				}
			}
			if f[1] == f[2] {
				return nil, bad("node %q paired with itself", f[1])
			}
			ck = append(ck, numbered{rn, Pair{f[1], f[2]}, n, line})
		default:
			return nil, fmt.Errorf("round file format %q: want superbench or clusterkit", format)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s round file: %w", format, err)
	}
	if format == ClusterKit {
		slices.SortStableFunc(ck, func(a, b numbered) int { return a.round - b.round })
		seen := map[string]bool{}
		inRound := map[string]bool{}
		for i, p := range ck {
			if i == 0 || p.round != ck[i-1].round {
				s.Rounds = append(s.Rounds, nil)
				clear(inRound)
			}
			for _, x := range []string{p.pair.A, p.pair.B} {
				if inRound[x] {
					return nil, &RoundFileError{format, p.line, p.text, fmt.Sprintf("node %q is in two pairs of round %d", x, p.round)}
				}
				inRound[x] = true
				if nodes == nil && !seen[x] {
					seen[x] = true
					s.Nodes = append(s.Nodes, x)
				}
			}
			s.Rounds[len(s.Rounds)-1] = append(s.Rounds[len(s.Rounds)-1], p.pair)
		}
	}
	return s, nil
}

// WriteRounds writes a schedule as a round file. SuperBench indexes
// s.Nodes; ClusterKit cannot carry a name with white space in it, and an
// empty round vanishes from it (it has no line), so both are errors.
func WriteRounds(w io.Writer, s *Schedule, format Format) error {
	bw := bufio.NewWriter(w)
	switch format {
	case SuperBench:
		idx := map[string]int{}
		for i, n := range s.Nodes {
			idx[n] = i
		}
		for r, round := range s.Rounds {
			if len(round) == 0 {
				return fmt.Errorf("round %d has no pairs: a SuperBench line cannot be empty", r)
			}
			toks := make([]string, len(round))
			for k, p := range round {
				i, okA := idx[p.A]
				j, okB := idx[p.B]
				if !okA || !okB {
					return fmt.Errorf("round %d: pair %s, %s is not in the node list", r, p.A, p.B)
				}
				toks[k] = fmt.Sprintf("%d,%d", i, j)
			}
			fmt.Fprintln(bw, strings.Join(toks, ";"))
		}
	case ClusterKit:
		for r, round := range s.Rounds {
			if len(round) == 0 {
				return fmt.Errorf("round %d has no pairs: ClusterKit's format has no line for it", r)
			}
			for _, p := range round {
				for _, x := range []string{p.A, p.B} {
					if x == "" || strings.ContainsFunc(x, unicode.IsSpace) {
						return fmt.Errorf("node name %q cannot be written in ClusterKit's format (white space or empty)", x)
					}
				}
				fmt.Fprintf(bw, "%d %s %s\n", r, p.A, p.B)
			}
		}
	default:
		return fmt.Errorf("round file format %q: want superbench or clusterkit", format)
	}
	return bw.Flush()
}
