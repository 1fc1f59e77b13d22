package host

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// Every JSON field of the snapshot is documented in docs/snapshot.md.
func TestSnapshotFieldsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/snapshot.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() != reflect.TypeOf(Snapshot{}).PkgPath() {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" && !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("%s.%s (json %q) is not in docs/snapshot.md", ty.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Snapshot{}))
}
