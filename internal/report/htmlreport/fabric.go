package htmlreport

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/host"
)

// fabricDrawing is --schedule cover's fabric: switches in rows by level
// (the top of the tree first), hosts at the bottom, every cable a line
// coloured by what crossed it: at speed, slow, nothing, and the named
// cable marked. Okabe–Ito colours, each with a dash pattern, so neither
// colour nor pattern alone carries the meaning.
type fabricDrawing struct {
	Width, Height int
	Nodes         []fabricNode
	Cables        []fabricCable
	// Hosts is false when there are too many to draw: host cables are
	// then summed up in HostNote.
	Hosts    bool
	HostNote string
	Named    string // the named cable or node, in words
}

type fabricNode struct {
	X, Y, LX, LY int
	Label, Title string
	CA, Named    bool
}

type fabricCable struct {
	X1, Y1, X2, Y2 int
	Class, Title   string
	MX, MY         int // the named cable's mark
}

// maxDrawnHosts keeps the drawing readable; beyond it hosts are counted.
const maxDrawnHosts = 64

func nodeOf(name string) string {
	if i := strings.LastIndex(name, " port "); i > 0 {
		return name[:i]
	}
	return name
}

func newFabricDrawing(cv *bench.Cover) *fabricDrawing {
	if cv == nil || len(cv.Links) == 0 {
		return nil
	}
	type node struct {
		name  string
		ca    bool
		level int
		named bool
	}
	nodes := map[host.GUID]*node{}
	type cable struct {
		a, b         host.GUID
		aName, bName string
		slow, fast   int
		named, ca    bool
	}
	cables := map[[2]string]*cable{}
	var order [][2]string
	for _, l := range cv.Links {
		for _, e := range []struct {
			g    host.GUID
			name string
			ca   bool
		}{{l.From.GUID, l.From.Name, l.FromCA}, {l.To.GUID, l.To.Name, l.ToCA}} {
			if nodes[e.g] == nil {
				nodes[e.g] = &node{name: nodeOf(e.name), ca: e.ca, level: -1}
			}
		}
		ka, kb := fmt.Sprintf("%s/%d", l.From.GUID, l.From.Port), fmt.Sprintf("%s/%d", l.To.GUID, l.To.Port)
		key := [2]string{min(ka, kb), max(ka, kb)}
		c := cables[key]
		if c == nil {
			c = &cable{a: l.From.GUID, b: l.To.GUID, aName: l.From.Name, bName: l.To.Name, ca: l.FromCA || l.ToCA}
			if l.To.Name < l.From.Name {
				c.a, c.b, c.aName, c.bName = l.To.GUID, l.From.GUID, l.To.Name, l.From.Name
			}
			cables[key] = c
			order = append(order, key)
		}
		c.slow += l.Slow
		c.fast += l.Fast
		c.named = c.named || l.Named
	}
	// levels: hosts 0, their switches 1, then one more per hop away
	adj := map[host.GUID][]host.GUID{}
	for _, c := range cables {
		adj[c.a] = append(adj[c.a], c.b)
		adj[c.b] = append(adj[c.b], c.a)
	}
	var queue []host.GUID
	for g, n := range nodes {
		if n.ca {
			n.level = 0
			queue = append(queue, g)
		}
	}
	for len(queue) > 0 {
		g := queue[0]
		queue = queue[1:]
		for _, o := range adj[g] {
			if nodes[o].level < 0 {
				nodes[o].level = nodes[g].level + 1
				queue = append(queue, o)
			}
		}
	}
	top, hosts := 1, 0
	for _, n := range nodes {
		if n.level < 0 {
			n.level = 1 // a switch no host reaches: with the leaves
		}
		top = max(top, n.level)
		if n.ca {
			hosts++
		}
	}
	d := &fabricDrawing{Hosts: hosts <= maxDrawnHosts}
	rows := map[int][]host.GUID{}
	for g, n := range nodes {
		if n.ca && !d.Hosts {
			continue
		}
		rows[n.level] = append(rows[n.level], g)
	}
	widest := 0
	for _, r := range rows {
		slices.SortFunc(r, func(a, b host.GUID) int { return cmp.Compare(nodes[a].name, nodes[b].name) })
		widest = max(widest, len(r))
	}
	const margin, rowGap = 40, 110
	d.Width = max(640, 2*margin+widest*26)
	bottom := 0
	if !d.Hosts {
		bottom = 1
	}
	d.Height = 2*margin + (top-bottom)*rowGap + 40
	pos := map[host.GUID][2]int{}
	for level, r := range rows {
		y := margin + 20 + (top-level)*rowGap
		for i, g := range r {
			x := margin + (2*i+1)*(d.Width-2*margin)/(2*len(r))
			pos[g] = [2]int{x, y}
		}
	}
	var hostSlow, hostFast, hostNone int
	for _, key := range order {
		c := cables[key]
		pa, okA := pos[c.a]
		pb, okB := pos[c.b]
		class := "fast"
		switch {
		case c.named:
			class = "named"
		case c.slow > 0:
			class = "slow"
		case c.fast == 0:
			class = "none"
		}
		if c.named {
			nodes[c.a].named = nodes[c.a].named || nodes[c.a].ca
			nodes[c.b].named = nodes[c.b].named || nodes[c.b].ca
			d.Named = c.aName + " ↔ " + c.bName
		}
		if !okA || !okB {
			switch class {
			case "slow", "named":
				hostSlow++
			case "fast":
				hostFast++
			default:
				hostNone++
			}
			continue
		}
		fc := fabricCable{X1: pa[0], Y1: pa[1], X2: pb[0], Y2: pb[1], Class: class,
			Title: fmt.Sprintf("%s ↔ %s: %d direction(s) crossed it slow, %d at speed", c.aName, c.bName, c.slow, c.fast)}
		if c.named {
			fc.Title += "; named by the localiser"
			fc.MX, fc.MY = (pa[0]+pb[0])/2, (pa[1]+pb[1])/2
		}
		d.Cables = append(d.Cables, fc)
	}
	// the named cable last, so nothing is drawn over it
	slices.SortStableFunc(d.Cables, func(a, b fabricCable) int {
		rank := map[string]int{"none": 0, "fast": 1, "slow": 2, "named": 3}
		return rank[a.Class] - rank[b.Class]
	})
	if !d.Hosts {
		d.HostNote = fmt.Sprintf("%d hosts are not drawn; their cables: %d crossed at speed, %d slow, %d not crossed", hosts, hostFast, hostSlow, hostNone)
	}
	for g, p := range pos {
		n := nodes[g]
		fn := fabricNode{X: p[0], Y: p[1], Label: n.name, Title: n.name + " (" + g.String() + ")", CA: n.ca, Named: n.named, LX: p[0], LY: p[1] - 12}
		if n.ca {
			fn.LY = p[1] + 16
		}
		d.Nodes = append(d.Nodes, fn)
	}
	slices.SortFunc(d.Nodes, func(a, b fabricNode) int { return cmp.Or(cmp.Compare(a.Y, b.Y), cmp.Compare(a.X, b.X)) })
	return d
}
