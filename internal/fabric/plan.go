package fabric

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// cablingFile is the YAML form of an intended topology (docs/cabling.md):
//
//	links:
//	  - {a: {node: "gpu017 HCA-1", port: 1}, b: {node: leaf03, port: 14}}
//	  - {a: {guid: "0x248a0703008a1b20", port: 1}, b: {guid: "0x7cfe900300a5f7c0", port: 1}}
type cablingFile struct {
	Links []TopoLink `json:"links"`
}

// ErrEmptyPlan means a topology file lists no links: comparing a fabric
// with it would call every cable unplanned.
var ErrEmptyPlan = errors.New("the plan lists no links")

// LoadTopology reads an intended topology: a YAML cabling list (.yaml,
// .yml) or anything ibnetdiscover or ibsim reads. A file with no links is
// an error.
func LoadTopology(path string) (*Topology, error) {
	b, err := userfile.ReadFile(path, userfile.Topology)
	if err != nil {
		return nil, err
	}
	var t *Topology
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".yaml" || ext == ".yml" {
		t, err = ParseCabling(b)
	} else if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		err = errors.New("this is JSON, not a topology: give an ibnetdiscover output, an ibsim netlist or a .yaml cabling plan (a fabric snapshot goes to --snapshot)")
	} else {
		t, err = ParseTopology(string(b))
	}
	if err == nil && len(t.Links) == 0 {
		err = ErrEmptyPlan
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

var (
	unknownFieldRE = lazyre.New(`unknown field "([^"]+)"`)
	typeErrRE      = lazyre.New(`cannot unmarshal (\w+) into Go struct field \w+\.([\w.]+) of type ([\w.]+)`)
)

// ParseCabling reads the YAML cabling list strictly: unknown keys, an end
// without a node name or GUID, a port below 1, and a port cabled twice are
// errors, named by link index (and line, for an unknown key).
func ParseCabling(b []byte) (*Topology, error) {
	var f cablingFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		msg := err.Error()
		if m := unknownFieldRE().FindStringSubmatch(msg); m != nil {
			line := 0
			for i, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, m[1]+":") {
					line = i + 1
					break
				}
			}
			return nil, fmt.Errorf("line %d: unknown field %q (an end is {node: NAME, port: N} or {guid: \"0x…\", port: N})", line, m[1])
		}
		if m := typeErrRE().FindStringSubmatch(msg); m != nil {
			want := map[string]string{"int": "a whole number", "host.GUID": "a GUID in quotes (guid: \"0x7cfe900300a5f7c0\")", "string": "text",
				"fabric.TopoEnd": "an end {node: NAME, port: N} or {guid: \"0x…\", port: N}", "[]fabric.TopoLink": "a list of links {a: END, b: END}"}[m[3]]
			if want == "" {
				want = "a mapping" // never a Go type name
			}
			field := strings.TrimPrefix(m[2], "cablingFile.")
			return nil, fmt.Errorf("line %d: field %s: got a %s, want %s", keyLine(b, field, m[1]), field, m[1], want)
		}
		return nil, err
	}
	used := map[TopoEnd]int{}
	for i, l := range f.Links {
		for _, e := range []TopoEnd{l.A, l.B} {
			if (e.Node == "" && e.GUID.IsZero()) || e.Port <= 0 {
				return nil, fmt.Errorf("links[%d]: each end needs a node (or guid) and a port ≥ 1, got %s", i, e)
			}
			if j, ok := used[e]; ok {
				return nil, fmt.Errorf("links[%d]: %s is already cabled in links[%d]", i, e, j)
			}
			used[e] = i
		}
	}
	return &Topology{Links: f.Links}, nil
}

// keyLine is the line (from 1) where the last key of a dotted field path
// holds a value of the kind got (number, string, array, object), else the
// first where the key appears, else 0: type errors come through JSON and
// carry no line of their own.
func keyLine(b []byte, field, got string) int {
	key := field[strings.LastIndex(field, ".")+1:]
	first := 0
	for i, l := range strings.Split(string(b), "\n") {
		at := -1 // where the key starts
		for _, lead := range []string{" ", "{", ",", "-"} {
			if j := strings.Index(l, lead+key+":"); j >= 0 {
				at = j + 1
				break
			}
		}
		if strings.HasPrefix(l, key+":") {
			at = 0
		}
		if at < 0 {
			continue
		}
		if first == 0 {
			first = i + 1
		}
		if v := strings.TrimSpace(l[at+len(key)+1:]); v != "" && kindOf(v[0]) == got {
			return i + 1
		}
	}
	return first
}

// kindOf is the JSON kind a YAML value starting with c has.
func kindOf(c byte) string {
	switch {
	case c >= '0' && c <= '9' || c == '-':
		return "number"
	case c == '[':
		return "array"
	case c == '{':
		return "object"
	}
	return "string"
}
