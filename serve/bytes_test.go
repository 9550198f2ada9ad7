package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

func pngOf(t *testing.T, w, h int, seed uint8) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x*37) + seed, uint8(y*53) ^ seed, seed * 3, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBytesMedia: PNG images sent as an OIP BYTES tensor of one element
// (HTTP binary form, gRPC bytes_contents and raw contents) to the
// image_patches adapter package, whose media input has one ownership
// level, are answered as the VM answers the same image in companion form
// (bytes, offsets [0, n], owner zeros).
func TestBytesMedia(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "image_patches")})
	md := s.model("image_patches")
	ref, err := engine.Open(md.plan, md.Dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	gc := grpcClient(t, s)
	for i, img := range [][]byte{pngOf(t, 4, 2, 1), pngOf(t, 2, 2, 9), pngOf(t, 6, 4, 77)} {
		n := int64(len(img))
		resp := ref.Run(context.Background(), vm.Request{ID: "ref", Inputs: map[string]*backend.Tensor{
			"png":         {DType: "uint8", Shape: []int64{n}, Data: img},
			"png_offsets": {DType: "int64", Shape: []int64{2}, Data: []int64{0, n}},
			"png_owner":   {DType: "int64", Shape: []int64{n}, Data: make([]int64, n)},
		}})
		if resp.Err != nil || resp.Outputs.Get("image_embeddings") == nil {
			t.Fatalf("image %d: reference %v", i, resp.Err)
		}
		blob := binary.LittleEndian.AppendUint32(nil, uint32(n))
		blob = append(blob, img...)
		hb, _ := json.Marshal(map[string]any{"inputs": []any{map[string]any{"name": "png", "datatype": "BYTES", "shape": []int{1},
			"parameters": map[string]any{"binary_data_size": len(blob)}}}, "parameters": map[string]any{"binary_data_output": true}})
		a := post(http.DefaultClient, hs.URL+"/v2/models/image_patches/infer", append(hb, blob...), len(hb))
		if a.err != nil || a.status != http.StatusOK {
			t.Fatalf("image %d HTTP: %d %s %v", i, a.status, a.rule, a.err)
		}
		if err := same(a.outputs, resp.Outputs.Map()); err != nil {
			t.Errorf("image %d HTTP: %v", i, err)
		}
		for _, raw := range []bool{false, true} {
			g := &oippb.ModelInferRequest{ModelName: "image_patches", Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "png", Datatype: "BYTES", Shape: []int64{1}}}}
			if raw {
				g.RawInputContents = [][]byte{blob}
			} else {
				g.Inputs[0].Contents = &oippb.InferTensorContents{BytesContents: [][]byte{img}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			gr, err := gc.ModelInfer(ctx, g)
			cancel()
			if err != nil {
				t.Fatalf("image %d gRPC raw %v: %v", i, raw, err)
			}
			got, err := grpcOutputs(gr)
			if err != nil {
				t.Fatal(err)
			}
			if err := same(got, resp.Outputs.Map()); err != nil {
				t.Errorf("image %d gRPC raw %v: %v", i, raw, err)
			}
		}
	}

	// Two images where the input takes one per request, a count that
	// disagrees with the shape, a length past the data, BYTES with the
	// derived offsets also given, BYTES with an items parameter: run/input
	// for that request.
	two := binary.LittleEndian.AppendUint32(nil, 1)
	two = append(two, 'a')
	two = binary.LittleEndian.AppendUint32(two, 1)
	two = append(two, 'b')
	for i, c := range []struct {
		body string
		bin  []byte
	}{
		{`{"inputs":[{"name":"png","datatype":"BYTES","shape":[2],"parameters":{"binary_data_size":10}}]}`, two},
		{`{"inputs":[{"name":"png","datatype":"BYTES","shape":[2],"data":["abc"]}]}`, nil},
		{`{"inputs":[{"name":"png","datatype":"BYTES","shape":[1,1],"data":["abc"]}]}`, nil},
		{`{"inputs":[{"name":"png","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":5}}]}`, []byte{9, 0, 0, 0, 1}},
		{`{"inputs":[{"name":"png","datatype":"BYTES","shape":[1],"data":["abc"]},{"name":"png_offsets","datatype":"INT64","shape":[2],"data":[0,3]}]}`, nil},
		{`{"inputs":[{"name":"png","datatype":"BYTES","shape":[1],"parameters":{"items":[3]},"data":["abc"]}]}`, nil},
	} {
		hlen := 0
		if c.bin != nil {
			hlen = len(c.body)
		}
		a := post(http.DefaultClient, hs.URL+"/v2/models/image_patches/infer", append([]byte(c.body), c.bin...), hlen)
		if a.status != http.StatusBadRequest || a.rule != backend.RunInput {
			t.Errorf("bad request %d: %d %s %v, want 400 run/input", i, a.status, a.rule, a.err)
		}
	}
}

// TestBytesItems: the frames of a clip sent as one BYTES tensor to
// video_fps, whose media input has two ownership levels (bytes → frames →
// clips), with their times, over HTTP (binary) and gRPC (bytes_contents
// and raw contents), are answered as the VM answers the same frames given
// as items, as a requests document gives them.
func TestBytesItems(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "video_fps"), NoWarmup: true})
	md := s.model("video_fps")
	ref, err := engine.Open(md.plan, md.Dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	gc := grpcClient(t, s)
	frames := [][]byte{pngOf(t, 3, 2, 5), pngOf(t, 4, 4, 9), pngOf(t, 2, 5, 77)}
	times := &backend.Tensor{DType: "float64", Shape: []int64{3}, Data: []float64{0, 0.4, 0.9}}
	resp := ref.Run(context.Background(), vm.Request{ID: "ref", Inputs: map[string]*backend.Tensor{"video_times": times},
		Items: map[string][]vm.Item{"video": vm.ByteItems(frames...)}})
	if resp.Err != nil || resp.Outputs.Get("clip_embeddings") == nil {
		t.Fatalf("reference: %v", resp.Err)
	}
	var blob []byte
	for _, f := range frames {
		blob = binary.LittleEndian.AppendUint32(blob, uint32(len(f)))
		blob = append(blob, f...)
	}
	tb := toBytes(times)
	hb, _ := json.Marshal(map[string]any{"inputs": []any{
		map[string]any{"name": "video", "datatype": "BYTES", "shape": []int{3}, "parameters": map[string]any{"binary_data_size": len(blob)}},
		map[string]any{"name": "video_times", "datatype": "FP64", "shape": []int{3}, "parameters": map[string]any{"binary_data_size": len(tb)}},
	}})
	a := post(http.DefaultClient, hs.URL+"/v2/models/video_fps/infer", append(append(hb, blob...), tb...), len(hb))
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("HTTP: %d %s %v %s", a.status, a.rule, a.err, a.message)
	}
	if err := same(a.outputs, resp.Outputs.Map()); err != nil {
		t.Errorf("HTTP: %v", err)
	}
	for _, raw := range []bool{false, true} {
		g := &oippb.ModelInferRequest{ModelName: "video_fps", Inputs: []*oippb.ModelInferRequest_InferInputTensor{
			{Name: "video", Datatype: "BYTES", Shape: []int64{3}}, {Name: "video_times", Datatype: "FP64", Shape: []int64{3}}}}
		if raw {
			g.RawInputContents = [][]byte{blob, tb}
		} else {
			g.Inputs[0].Contents = &oippb.InferTensorContents{BytesContents: frames}
			g.Inputs[1].Contents = &oippb.InferTensorContents{Fp64Contents: times.Data.([]float64)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		gr, err := gc.ModelInfer(ctx, g)
		cancel()
		if err != nil {
			t.Fatalf("gRPC raw %v: %v", raw, err)
		}
		got, err := DecodeGRPC(gr)
		if err == nil {
			err = sameAnswer(got.Outputs.Map(), got.Items, resp)
		}
		if err != nil {
			t.Errorf("gRPC raw %v: %v", raw, err)
		}
	}
}
