package fabric

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/host"
)

// Decode reads a snapshot (envelope or bare) and refuses a schema or a
// kind it does not know.
func Decode(r io.Reader) (*Snapshot, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	payload, err := envelope.Payload(b, envelope.FabricSnapshot)
	var wk *envelope.WrongKindError
	if errors.As(err, &wk) {
		return nil, fmt.Errorf("this is a %s document (rdmalab %s), not a fabric snapshot", wk.Got, commandOf(wk.Got))
	}
	if err != nil {
		return nil, fmt.Errorf("not a fabric snapshot: %w", err)
	}
	var head struct {
		SchemaVersion int             `json:"schema_version"`
		Ports         json.RawMessage `json:"ports"`
		Hostname      *string         `json:"hostname"`
		RDMA          json.RawMessage `json:"rdma"`
	}
	if err := json.Unmarshal(payload, &head); err != nil {
		return nil, fmt.Errorf("not a fabric snapshot: %w", envelope.Explain(b, payload, err))
	}
	if head.Ports == nil && (head.Hostname != nil || head.RDMA != nil) {
		return nil, errors.New("this is a host snapshot (rdmalab inventory), not a fabric snapshot")
	}
	switch head.SchemaVersion {
	case SchemaVersion:
		var s Snapshot
		if err := json.Unmarshal(payload, &s); err != nil {
			return nil, fmt.Errorf("not a fabric snapshot: %w", envelope.Explain(b, payload, err))
		}
		return &s, nil
	case 1:
		return decodeV1(payload)
	case 0:
		return nil, errors.New("not a fabric snapshot: no schema_version")
	}
	return nil, fmt.Errorf("fabric snapshot schema_version %d, this rdmalab reads 1 and %d", head.SchemaVersion, SchemaVersion)
}

func commandOf(k envelope.Kind) string {
	switch k {
	case envelope.HostSnapshot:
		return "inventory"
	case envelope.FabricCheck:
		return "fabric check: findings, not the fabric"
	}
	return string(k)
}

// v1 differed in one place: a far end carried one "guid", the port GUID
// iblinkinfo printed. Its node GUID is resolved from the rest.
type v1End struct {
	GUID     host.GUID `json:"guid"`
	NodeDesc string    `json:"node_desc"`
	Port     int       `json:"port"`
	LID      int       `json:"lid"`
}

type v1Port struct {
	Port
	Remote *v1End `json:"remote,omitempty"`
}

type v1Snapshot struct {
	Snapshot
	Ports []v1Port `json:"ports"`
}

func decodeV1(b []byte) (*Snapshot, error) {
	var v v1Snapshot
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("not a version-1 fabric snapshot: %w", err)
	}
	s := v.Snapshot
	s.SchemaVersion = SchemaVersion
	s.Ports = nil
	for _, p := range v.Ports {
		q := p.Port
		if p.Remote != nil {
			q.Remote = &End{PortGUID: p.Remote.GUID, NodeDesc: p.Remote.NodeDesc, Port: p.Remote.Port, LID: p.Remote.LID}
		}
		s.Ports = append(s.Ports, q)
	}
	// Version 1 came only from a full scan; a failed counter read was
	// recorded among the errors.
	s.Read = slices.Clone(AllTools)
	for _, e := range s.Errors {
		if strings.HasPrefix(e, "error counters") && s.CounterError == "" {
			s.CounterError = e
		}
	}
	s.Resolve()
	return &s, nil
}

// Encode writes the bare snapshot as indented JSON (the recorded examples;
// commands write it inside the envelope).
func (s *Snapshot) Encode(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(s)
}
