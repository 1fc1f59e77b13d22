package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// load reads a snapshot file as intake does.
func load(path string) (*Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeBytes(b)
}

// A version-1 snapshot (committed as rdmalab wrote it, GUIDs in sysfs form)
// still loads, and its GUIDs become the typed form.
func TestLoadVersion1(t *testing.T) {
	s, err := load("testdata/v1-r730-qdr.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Hostname != "columbia.lab" || len(s.RDMADevices) != 1 {
		t.Fatalf("%s %d", s.Hostname, len(s.RDMADevices))
	}
	if g := s.RDMADevices[0].NodeGUID; g.String() != "0x248a070300ac5414" {
		t.Errorf("node guid %s", g)
	}
}

// A snapshot written as a document reads back equal; a bare one too.
func TestEnvelopeRoundTrip(t *testing.T) {
	s, err := load("testdata/v1-r730-qdr.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc bytes.Buffer
	if err := s.Encode(&doc); err != nil {
		t.Fatal(err)
	}
	if k, err := envelope.Peek(doc.Bytes()); err != nil || k != envelope.HostSnapshot {
		t.Fatalf("kind %q %v", k, err)
	}
	back, err := Decode(&doc)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	s.Encode(&a)
	back.Encode(&b)
	if a.String() != b.String() {
		t.Error("document round trip changed the snapshot")
	}
	if !strings.Contains(a.String(), `"node_guid": "0x248a070300ac5414"`) {
		t.Error("GUID not written in the typed form")
	}
}

// Another kind of document, or a bare fabric snapshot, is refused saying
// what it is (intake names the file: TestHostRefuses).
func TestWrongKindRefused(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "fabric.json")
	var b bytes.Buffer
	envelope.Write(&b, envelope.FabricSnapshot, nil, map[string]any{"schema_version": 1, "nodes": []any{}})
	os.WriteFile(doc, b.Bytes(), 0o644)
	bare := filepath.Join(dir, "old-fabric.json")
	os.WriteFile(bare, []byte(`{"schema_version": 1, "collected_at": "2026-01-01T00:00:00Z", "nodes": [], "ports": [], "subnet_managers": []}`), 0o644)
	for _, p := range []string{doc, bare} {
		_, err := load(p)
		var wk *WrongKindError
		if !errors.As(err, &wk) || wk.Got != envelope.FabricSnapshot {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// The complete example in docs/snapshot.md loads.
func TestDocExampleLoads(t *testing.T) {
	doc, err := os.ReadFile("../../docs/snapshot.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no json example in docs/snapshot.md")
	}
	s, err := Decode(strings.NewReader(block))
	if err != nil {
		t.Fatal(err)
	}
	// Every field in the example is a field of the model.
	payload, err := envelope.Payload([]byte(block), envelope.HostSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	// (state_id and phys_state_id are written beside the state names, which
	// say the same, and skipped when read: TestPortStateJSON.)
	dec := json.NewDecoder(bytes.NewReader(regexp.MustCompile(`"(phys_)?state_id": \d+, `).ReplaceAll(payload, nil)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(new(Snapshot)); err != nil {
		t.Errorf("docs/snapshot.md example: %v", err)
	}
	p := s.RDMADevices[0].Ports[0]
	if s.Hostname != "node01" || p.PortGUID != s.RDMADevices[0].NodeGUID || p.RateGbps != 200 || *p.LID != 7 {
		t.Errorf("%+v", p)
	}
}

// Whatever a snapshot file holds, a decoded snapshot encodes and decodes to
// the same document: nothing read is lost or changed on the way back out.
func FuzzDecodeRoundTrip(f *testing.F) {
	if b, err := os.ReadFile("testdata/v1-r730-qdr.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"schema_version": 2, "hostname": "h", "rdma_devices": [{"name": "mlx5_0", "node_guid": "506b:4b03:0043:3a00", "ports": [{"port": 1, "port_guid": "0x1"}]}]}`))
	f.Add([]byte(`{"kind": "host-snapshot", "schema_version": 1, "payload": {"schema_version": 1, "hostname": "x"}}`))
	f.Add([]byte(`{"kind": "fabric-snapshot", "schema_version": 1, "payload": {}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeBytes(b)
		if err != nil {
			return
		}
		var once bytes.Buffer
		if err := s.Encode(&once); err != nil {
			t.Fatal(err)
		}
		again, err := DecodeBytes(once.Bytes())
		if err != nil {
			t.Fatalf("re-decoding our own output: %v\n%s", err, once.String())
		}
		var twice bytes.Buffer
		again.Encode(&twice)
		if once.String() != twice.String() {
			t.Fatalf("round trip changed the snapshot:\n%s\n%s", once.String(), twice.String())
		}
	})
}

// A port's states are written as sysfs spells them, with their numbers,
// whatever spelling the snapshot was read from (a tool's, an old file's).
func TestPortStateJSON(t *testing.T) {
	var p RDMAPort
	if err := json.Unmarshal([]byte(`{"port":1,"state":"Active","state_id":0,"phys_state":"LINK_UP (5)","rate":{"raw":""},"link_layer":"InfiniBand"}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Port != 1 || p.State != portstate.Active || p.PhysState != portstate.LinkUp || p.LinkLayer != "InfiniBand" {
		t.Fatalf("%+v", p)
	}
	b, err := json.Marshal(p)
	if err != nil || !strings.HasPrefix(string(b), `{"port":1,"state":"ACTIVE","state_id":4,"phys_state":"LinkUp","phys_state_id":5,"rate":`) {
		t.Errorf("%s %v", b, err)
	}
	if b, _ := json.Marshal(RDMAPort{Port: 2}); !strings.HasPrefix(string(b), `{"port":2,"state":"","state_id":0,"phys_state":"","phys_state_id":0,"rate":`) {
		t.Errorf("unknown states: %s", b)
	}
}
