package design

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/fabric"
)

// docBlock returns the body of the first fenced block of that language.
func docBlock(t *testing.T, doc, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "```"+lang+"\n")
	if !ok {
		t.Fatalf("docs/design.md has no %s block", lang)
	}
	body, _, _ := strings.Cut(rest, "```")
	return body
}

// docs/design.md's examples are what rdmalab writes: the cabling plan
// loads as fabric check reads it and equals the generated one; the leaf
// config is the generated one.
func TestDocExamples(t *testing.T) {
	b, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	top, err := fabric.ParseCabling([]byte(docBlock(t, doc, "yaml")))
	if err != nil {
		t.Fatalf("the documented cabling plan: %v", err)
	}
	f, err := PlanFabric(FabricRequest{Hosts: 6, NICsPerNode: 1, Radix: 4, Rate: "4X HDR", Oversubscription: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(top.Links, f.Cabling) {
		t.Errorf("the documented plan is not what --endpoints 6 --radix 4 writes:\n%v\n%v", top.Links, f.Cabling)
	}
	c, err := PlanFRR(defaultFRR(2, 4))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range c.Files {
		if file.Name == "leaf01.conf" && docBlock(t, doc, "frr") != string(file.Content) {
			t.Errorf("the documented leaf01.conf is not what design frr writes:\n%s", file.Content)
		}
	}
}
