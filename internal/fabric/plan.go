package fabric

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// cablingFile is the YAML form of an intended topology:
//
//	links:
//	  - {a: {node: "gpu017 HCA-1", port: 1}, b: {node: leaf03, port: 14}}
type cablingFile struct {
	Links []TopoLink `json:"links"`
}

// LoadTopology reads an intended topology: a YAML cabling list (.yaml,
// .yml) or anything ibnetdiscover or ibsim reads.
func LoadTopology(path string) (*Topology, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".yaml" && ext != ".yml" {
		t, err := ParseTopology(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return t, nil
	}
	t, err := ParseCabling(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseCabling reads the YAML cabling list strictly: unknown keys, a
// missing node or port, and a port cabled twice are errors.
func ParseCabling(b []byte) (*Topology, error) {
	var f cablingFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, err
	}
	used := map[TopoEnd]int{}
	for i, l := range f.Links {
		for _, e := range []TopoEnd{l.A, l.B} {
			if e.Node == "" || e.Port <= 0 {
				return nil, fmt.Errorf("links[%d]: each end needs a node and a port ≥ 1, got %+v", i, e)
			}
			if j, ok := used[e]; ok {
				return nil, fmt.Errorf("links[%d]: %s is already cabled in links[%d]", i, e, j)
			}
			used[e] = i
		}
	}
	t := &Topology{Links: f.Links}
	return t, nil
}
