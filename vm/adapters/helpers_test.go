package adapters

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// op builds a transform: params alternate key and value.
func op(name, in, out string, params ...string) ir.Transform {
	t := ir.Transform{Op: name}
	if in != "" {
		t.Inputs = []string{in}
	}
	if out != "" {
		t.Outputs = []string{out}
	}
	for i := 0; i+1 < len(params); i += 2 {
		t.Params = append(t.Params, irParam(params[i], params[i+1]))
	}
	return t
}

// irParam builds a parameter as the front end lowers it: "[a, b]" is a list,
// and a scalar's kind is what YAML would read in its text (true and false
// are booleans).
func irParam(key, text string) ir.Param {
	if inner, ok := strings.CutPrefix(text, "["); ok {
		p := ir.Param{Key: key, Kind: ir.ParamList}
		for _, it := range strings.Split(strings.TrimSuffix(inner, "]"), ",") {
			if it = strings.TrimSpace(it); it != "" {
				p.Items = append(p.Items, irParam("", it))
			}
		}
		return p
	}
	kind := ir.ParamString
	if text == "true" || text == "false" {
		kind = ir.ParamBool
	} else if _, err := strconv.ParseInt(text, 10, 64); err == nil {
		kind = ir.ParamInt
	} else if _, err := strconv.ParseFloat(text, 64); err == nil {
		kind = ir.ParamFloat
	}
	return ir.Param{Key: key, Kind: kind, Text: text}
}

// dims builds a shape: integers are fixed extents, strings symbols.
func dims(ds ...any) []ir.Dim {
	out := make([]ir.Dim, len(ds))
	for i, d := range ds {
		switch d := d.(type) {
		case int:
			out[i] = ir.Dim{Size: int64(d)}
		case string:
			out[i] = ir.Dim{Sym: d}
		}
	}
	return out
}

func contract(dtype string, shape []ir.Dim) *ir.Contract {
	return &ir.Contract{DType: dtype, Rank: len(shape), HasShape: true, Shape: shape}
}

func packed(c *ir.Contract, offsets, owner string, extent ir.Extent) *ir.Contract {
	c.Layout = ir.Layout{Kind: ir.TokenPacked, Levels: []ir.Level{{Offsets: ir.Ref{Name: offsets}, Owner: ir.Ref{Name: owner}, Extent: extent}}}
	return c
}

// fixture is a module with one image program and its adapter, built up by
// a test before it loads the adapter.
type fixture struct {
	m    *ir.Module
	comp *ir.Component
	prog *ir.Program
}

// newFixture is the adapter of the end-to-end document in miniature:
// packed encoded bytes with their offsets as a port, packed pixels of the
// given shape with produced offsets and owner.
func newFixture(transforms []ir.Transform, pixelShape []ir.Dim) *fixture {
	m := ir.NewModule()
	comp := &ir.Component{Name: "pre", Impl: ir.ImplAdapter, ABI: preprocess.ABI("image"), Version: "1",
		Inputs: []*ir.Port{
			{Name: "encoded", Contract: packed(contract("uint8", dims("bytes")), "byte_offsets", "byte_owner", ir.ExtentNone)},
			{Name: "byte_offsets", Contract: contract("int64", dims("nb"))},
		},
		Outputs: []*ir.Port{
			{Name: "pixels", Contract: packed(contract("float32", pixelShape), "offsets", "owner", ir.ExtentProduced)},
			{Name: "offsets", Contract: contract("int64", dims("rows_plus_one"))},
			{Name: "owner", Contract: contract("int64", dims("images"))},
		}}
	prog := &ir.Program{Modality: "image", Transforms: transforms, Outputs: []ir.ProgramOutput{
		{Name: "pixels", Source: transforms[len(transforms)-1].Outputs[0], Content: "pixels", DType: "float32"},
		{Name: "offsets", Source: "image.pack_offsets", Content: "pack_offsets", DType: "int64"},
		{Name: "owner", Source: "image.pack_owner", Content: "pack_owner", DType: "int64"},
	}}
	m.Components = append(m.Components, comp)
	m.Programs = append(m.Programs, prog)
	return &fixture{m: m, comp: comp, prog: prog}
}

func (f *fixture) load(t *testing.T) backend.Session {
	t.Helper()
	s, err := New(f.m).Load(f.comp, "")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// request packs encoded images into the adapter's two input ports.
func request(imgs ...[]byte) map[string]*backend.Tensor {
	var data []byte
	offs := []int64{0}
	for _, b := range imgs {
		data = append(data, b...)
		offs = append(offs, int64(len(data)))
	}
	if data == nil {
		data = []byte{}
	}
	return map[string]*backend.Tensor{
		"encoded":      {DType: "uint8", Shape: []int64{int64(len(data))}, Data: data},
		"byte_offsets": {DType: "int64", Shape: []int64{int64(len(offs))}, Data: offs},
	}
}

func run(t *testing.T, s backend.Session, in map[string]*backend.Tensor, outs ...string) map[string]*backend.Tensor {
	t.Helper()
	res, err := s.Run(context.Background(), in, outs)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// solid is a w×h image of one colour.
func solid(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// coords is a w×h image whose red is 10·x, green 10·y and blue 7, so that
// every pixel says where it came from.
func coords(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(10 * x), G: uint8(10 * y), B: 7, A: 255})
		}
	}
	return img
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func wantShape(t *testing.T, name string, got *backend.Tensor, want ...int64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no tensor", name)
	}
	if len(got.Shape) != len(want) {
		t.Fatalf("%s: shape %v, want %v", name, got.Shape, want)
	}
	for i := range want {
		if got.Shape[i] != want[i] {
			t.Fatalf("%s: shape %v, want %v", name, got.Shape, want)
		}
	}
}

func wantInts(t *testing.T, name string, got *backend.Tensor, want ...int64) {
	t.Helper()
	wantShape(t, name, got, int64(len(want)))
	for i, v := range got.Int64s() {
		if v != want[i] {
			t.Fatalf("%s = %v, want %v", name, got.Int64s(), want)
		}
	}
}

// wantRunError checks that err is a *backend.RunError of rule whose message
// holds every fragment.
func wantRunError(t *testing.T, err error, rule string, fragments ...string) {
	t.Helper()
	var re *backend.RunError
	if !errors.As(err, &re) {
		t.Fatalf("got %v (%T), want a *backend.RunError %s", err, err, rule)
	}
	if re.Rule != rule {
		t.Fatalf("rule %s, want %s: %s", re.Rule, rule, re.Message)
	}
	for _, f := range fragments {
		if !strings.Contains(re.Message, f) {
			t.Errorf("message %q does not mention %q", re.Message, f)
		}
	}
}
