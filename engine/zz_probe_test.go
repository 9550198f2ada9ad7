package engine

import (
	"context"
	"os"
	"testing"
)

func TestZZProbePlan(t *testing.T) {
	pkg := os.Getenv("PROBE_PKG")
	if pkg == "" {
		t.Skip()
	}
	f, dir := compile(t, pkg)
	reqs := readRequests(t, dir)
	for range 3 {
		x, err := PlanExecution(context.Background(), f, dir, Options{}, reqs, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(x)
	}
}
