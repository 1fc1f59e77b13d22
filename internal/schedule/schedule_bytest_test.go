package schedule

import "testing"

func TestByHost(t *testing.T) {
	s := &Schedule{Nodes: []string{"gpu01 mlx5_0", "gpu02 mlx5_0", "gpu03 HCA-1", "gpu04 HCA-1"},
		Rounds: [][]Pair{{{"gpu01 mlx5_0", "gpu02 mlx5_0"}, {"gpu03 HCA-1", "gpu04 HCA-1"}}}}
	h, err := s.ByHost()
	if err != nil || h.Rounds[0][1].A != "gpu03" || h.Nodes[1] != "gpu02" {
		t.Fatalf("%+v %v", h, err)
	}
	s.Nodes = append(s.Nodes, "gpu01 mlx5_1")
	if _, err := s.ByHost(); err == nil {
		t.Error("a host with two CAs was named by host alone")
	}
}
