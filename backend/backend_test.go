package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/genaic/genaic/ir"
)

func TestParseReadinessKey(t *testing.T) {
	for in, want := range map[string]ReadinessKey{
		"encoder":             {Component: "encoder"},
		"encoder/*/cuda":      {Component: "encoder", Provider: "cuda"},
		"*/onnx-graph":        {OpClass: "onnx-graph"},
		"enc/onnx-graph/cpu":  {Component: "enc", OpClass: "onnx-graph", Provider: "cpu"},
		"*/*/tensorrt":        {Provider: "tensorrt"},
		"encoder//directml":   {Component: "encoder", Provider: "directml"},
		"video_encoder/*/cpu": {Component: "video_encoder", Provider: "cpu"},
	} {
		got, err := ParseReadinessKey(in)
		if err != nil || got != want {
			t.Errorf("ParseReadinessKey(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a/b/c/d"} {
		if _, err := ParseReadinessKey(bad); err == nil {
			t.Errorf("ParseReadinessKey(%q) accepted", bad)
		}
	}
}

// TestDeclinesApply: a matching key declines with its reason, the most
// specific key wins, a backend's own decline stands, and a key for another
// component, class or provider leaves the session ready.
func TestDeclinesApply(t *testing.T) {
	ready := Readiness{Ready: true, Provider: "cpu", OpClass: "onnx-graph"}
	d := Declines{
		{Provider: "cpu"}:                        "cpu groups are unverified",
		{Component: "enc", Provider: "cpu"}:      "enc on cpu is unverified",
		{Component: "other"}:                     "other is unverified",
		{OpClass: "preprocess-image"}:            "not this class",
		{Component: "enc", OpClass: "binding"}:   "not this class either",
		{Component: "enc", Provider: "tensorrt"}: "not this provider",
	}
	for comp, want := range map[string]string{"enc": "enc on cpu is unverified", "dec": "cpu groups are unverified", "other": "cpu groups are unverified"} {
		if got := d.Apply(comp, ready); got.Ready || got.Reason != want {
			t.Errorf("Apply(%s) = %+v, want declined: %s", comp, got, want)
		}
	}
	if got := (Declines{{Component: "enc", Provider: "cuda"}: "x"}).Apply("enc", ready); !got.Ready {
		t.Errorf("a key for another provider declined: %+v", got)
	}
	own := Readiness{Provider: "cuda", OpClass: "onnx-graph", Reason: "the library lacks cuda"}
	if got := d.Apply("enc", own); got != own {
		t.Errorf("a backend's own decline became %+v", got)
	}
	if got := Declines(nil).Apply("enc", ready); got != ready {
		t.Errorf("no table changed readiness: %+v", got)
	}
}

// TestDeclinesApplyOps: a key's operator class matches any operator type
// the component's graph uses, on the provider it names (the most specific
// key wins, as in Apply); other types, and
// other providers, leave the session ready.
func TestDeclinesApplyOps(t *testing.T) {
	ready := Readiness{Ready: true, Provider: "cuda", OpClass: "onnx-graph"}
	d := Declines{
		{OpClass: "Conv", Provider: "cuda"}:                                      "Conv groups are unverified on cuda",
		{Component: "enc", OpClass: "com.microsoft:Attention", Provider: "cuda"}: "enc's attention is unverified",
	}
	for _, tc := range []struct {
		comp, reason string
		ops          []string
	}{
		{"enc", "Conv groups are unverified on cuda", []string{"Add", "Conv"}},
		{"dec", "Conv groups are unverified on cuda", []string{"Conv", "com.microsoft:Attention"}},
		{"enc", "enc's attention is unverified", []string{"Conv", "com.microsoft:Attention"}},
		{"enc", "", []string{"Add", "MatMul"}},
		{"dec", "", []string{"com.microsoft:Attention"}},
		{"enc", "", nil},
	} {
		got := d.ApplyOps(tc.comp, tc.ops, ready)
		if got.Ready != (tc.reason == "") || got.Reason != tc.reason {
			t.Errorf("ApplyOps(%s, %v) = %+v, want reason %q", tc.comp, tc.ops, got, tc.reason)
		}
	}
	cpu := Readiness{Ready: true, Provider: "cpu", OpClass: "onnx-graph"}
	if got := d.ApplyOps("dec", []string{"Conv"}, cpu); !got.Ready {
		t.Errorf("a Conv key for cuda declined on cpu: %+v", got)
	}
}

// TestLocated: a RunError without a location gets one, as a copy; a
// located one, another error, or an unknown location is left alone.
func TestLocated(t *testing.T) {
	at := ir.Location{Line: 3, Col: 5, Path: "pipeline.workflow.steps[0]"}
	orig := Errorf("run/input", "bad")
	got := Located(orig, at)
	var re *RunError
	if !errors.As(got, &re) || re.At == nil || *re.At != at || re.Rule != "run/input" || re.Message != "bad" {
		t.Fatalf("Located = %#v", got)
	}
	if orig.At != nil {
		t.Error("Located changed the original error")
	}
	other := ir.Location{Line: 9, Col: 1}
	if again := Located(got, other); again != got {
		t.Error("a located error was located again")
	}
	if plain := fmt.Errorf("plain"); Located(plain, at) != plain {
		t.Error("a plain error changed")
	}
	if Located(orig, ir.Location{}) != error(orig) {
		t.Error("the unknown location was set")
	}
}

// TestBindingPanicIsRunBackend: a registered function that panics fails
// its call with a run/backend error naming the panic, as an error would;
// one that returns normally is unaffected.
func TestBindingPanicIsRunBackend(t *testing.T) {
	b := &Bindings{}
	b.Register("enc", func(_ context.Context, in map[string]*Tensor) (map[string]*Tensor, error) {
		if in["x"] == nil {
			panic("no x")
		}
		return map[string]*Tensor{"y": in["x"]}, nil
	})
	s, err := b.Load(&ir.Component{Name: "enc"}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(context.Background(), map[string]*Tensor{}, []string{"y"})
	var re *RunError
	if !errors.As(err, &re) || re.Rule != RunBackend || !strings.Contains(re.Message, "panicked: no x") {
		t.Fatalf("a panicking function gave %v, want a run/backend error naming the panic", err)
	}
	x := &Tensor{DType: "float32", Shape: []int64{1}, Data: []float32{2}}
	out, err := s.Run(context.Background(), map[string]*Tensor{"x": x}, []string{"y"})
	if err != nil || out["y"] != x {
		t.Fatalf("after a panic, a good call gave %v, %v", out, err)
	}
}
