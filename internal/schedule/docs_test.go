package schedule

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/route"
)

func docBlock(t *testing.T, doc, tag string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)```" + tag + "\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/schedule.md has no ```%s block", tag)
	}
	return m[1]
}

// The examples in docs/schedule.md are real: the LFT excerpt parses, and
// both round files are the cover schedule of the example fabric.
func TestDocExamples(t *testing.T) {
	b, err := os.ReadFile("../../docs/schedule.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	lfts, err := route.ParseLFTs(strings.NewReader(docBlock(t, doc, "lft")))
	if err != nil || len(lfts) != 1 || lfts[0].Name != "leaf01" || len(lfts[0].Out) != 7 {
		t.Fatalf("lft example: %+v %v", lfts, err)
	}
	f := smallFabric(t, "fattree-2x4x4-updn.opensm-lfts.dump")
	want := Plan(f, "").Schedule
	sb, err := ReadRounds(strings.NewReader(docBlock(t, doc, "superbench")), SuperBench, want.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := ReadRounds(strings.NewReader(docBlock(t, doc, "clusterkit")), ClusterKit, want.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sb, want) || !reflect.DeepEqual(ck, want) {
		t.Errorf("the doc's round files are not the example fabric's cover schedule:\n%+v\n%+v\n%+v", sb, ck, want)
	}
}

// Every JSON field of the payload is documented.
func TestPayloadFieldsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/schedule.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() != reflect.TypeOf(Payload{}).PkgPath() {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			fd := ty.Field(i)
			name, _, _ := strings.Cut(fd.Tag.Get("json"), ",")
			if name != "" && !strings.Contains(string(b), fmt.Sprintf("`%s`", name)) {
				t.Errorf("%s.%s (json %q) is not in docs/schedule.md", ty.Name(), fd.Name, name)
			}
			walk(fd.Type)
		}
	}
	walk(reflect.TypeOf(Payload{}))
}
