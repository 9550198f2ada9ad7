package adapters_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/adapters"
)

// The end-to-end documents: the image adapter decodes each request's images
// and packs their pixels; a binding encoder groups the images of many
// requests and returns, per image, the mean of each channel. In
// image_encoder.yaml the adapter runs one request per invocation; in
// image_grouped.yaml it has a batch_capacity and decodes the images of
// several requests at once, with an images→rows level bound as a port.

var docs = []string{"testdata/image_encoder.yaml", "testdata/image_grouped.yaml"}

func compile(t *testing.T, path string) *plan.File {
	t.Helper()
	d, err := passes.CheckPath(path, passes.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Valid() {
		t.Fatalf("%s: %v", path, d.Diags())
	}
	f, err := passes.BuildPlan(d, filepath.Dir(d.File))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// encoder is the binding: per image, the mean of each channel. It records
// the largest group it saw and checks the budget of 8 images.
type encoder struct {
	mu      sync.Mutex
	largest int64
}

func (e *encoder) run(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	px := in["pixels"]
	if px == nil || px.Rank() != 4 || px.Shape[1] != 3 {
		return nil, fmt.Errorf("pixels %v, want [images, 3, 4, 4]", px)
	}
	n, plane := px.Shape[0], px.Shape[2]*px.Shape[3]
	if n > 8 {
		return nil, fmt.Errorf("a group of %d images exceeds the budget of 8", n)
	}
	e.mu.Lock()
	e.largest = max(e.largest, n)
	e.mu.Unlock()
	data := px.Float32s()
	out := make([]float32, n*3)
	for i := range n * 3 {
		sum := float64(0)
		for _, v := range data[i*plane : (i+1)*plane] {
			sum += float64(v)
		}
		out[i] = float32(sum / float64(plane))
	}
	return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{n, 3}, Data: out}}, nil
}

func open(t *testing.T, doc string, solo bool) (*vm.Engine, *encoder) {
	t.Helper()
	f := compile(t, doc)
	m := f.IR
	enc := &encoder{}
	b := &backend.Bindings{}
	b.Register("encoder", enc.run)
	e, err := vm.Open(f, filepath.Dir(doc), map[ir.ImplKind]backend.Backend{ir.ImplAdapter: adapters.New(m), ir.ImplBinding: b}, vm.Options{
		Solo:     solo,
		MaxDelay: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, enc
}

// pictures is one request's images: their colours and encodings.
type pictures struct {
	colours []color.NRGBA
	encoded [][]byte
}

// request packs the images into one request: the bytes with their offsets
// and owners, and with rows, the images→rows level of the request's one row.
func (p pictures) request(id string, rows bool) vm.Request {
	data := []byte{}
	offs := []int64{0}
	var owner []int64
	for i, b := range p.encoded {
		data = append(data, b...)
		offs = append(offs, int64(len(data)))
		for range b {
			owner = append(owner, int64(i))
		}
	}
	if owner == nil {
		owner = []int64{}
	}
	in := map[string]*backend.Tensor{
		"encoded_images":     {DType: "uint8", Shape: []int64{int64(len(data))}, Data: data},
		"image_byte_offsets": {DType: "int64", Shape: []int64{int64(len(offs))}, Data: offs},
		"image_byte_owner":   {DType: "int64", Shape: []int64{int64(len(owner))}, Data: owner},
	}
	if rows {
		n := int64(len(p.encoded))
		in["image_rows"] = &backend.Tensor{DType: "int64", Shape: []int64{2}, Data: []int64{0, n}}
		in["image_row_owner"] = &backend.Tensor{DType: "int64", Shape: []int64{n}, Data: make([]int64, n)}
	}
	return vm.Request{ID: id, Inputs: in}
}

// randomPictures draws 0 to 4 solid images of random sizes, PNG or JPEG.
func randomPictures(t *testing.T, rng *rand.Rand) pictures {
	var p pictures
	for range rng.Intn(5) {
		c := color.NRGBA{R: uint8(rng.Intn(256)), G: uint8(rng.Intn(256)), B: uint8(rng.Intn(256)), A: 255}
		img := image.NewNRGBA(image.Rect(0, 0, 1+rng.Intn(12), 1+rng.Intn(12)))
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
		}
		var b bytes.Buffer
		var err error
		if rng.Intn(2) == 0 {
			err = png.Encode(&b, img)
		} else {
			err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 100})
		}
		if err != nil {
			t.Fatal(err)
		}
		p.colours = append(p.colours, c)
		p.encoded = append(p.encoded, b.Bytes())
	}
	return p
}

// check compares a response with the colours: one embedding row per image,
// each channel the normalized colour (JPEG within its rounding), offsets
// [0, n] and owners zero.
func check(t *testing.T, p pictures, r vm.Response) {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("request %s: %v", r.ID, r.Err)
	}
	n := int64(len(p.colours))
	emb := r.Outputs.Get("embeddings")
	if emb == nil || len(emb.Shape) != 2 || emb.Shape[0] != n || emb.Shape[1] != 3 {
		t.Fatalf("request %s: embeddings %v, want [%d, 3]", r.ID, emb, n)
	}
	for i, c := range p.colours {
		for k, v := range []uint8{c.R, c.G, c.B} {
			want := (float64(v)/255 - 0.5) / 0.5
			if got := float64(emb.Float32s()[i*3+k]); math.Abs(got-want) > 6.0/255 {
				t.Errorf("request %s image %d channel %d = %v, want %v", r.ID, i, k, got, want)
			}
		}
	}
	offs, owner := r.Outputs.Get("image.offsets"), r.Outputs.Get("image.owner")
	if offs == nil || len(offs.Int64s()) != 2 || offs.Int64s()[0] != 0 || offs.Int64s()[1] != n {
		t.Errorf("request %s: image.offsets %v, want [0, %d]", r.ID, offs, n)
	}
	if owner == nil || owner.Len() != n {
		t.Fatalf("request %s: image.owner %v, want %d zeros", r.ID, owner, n)
	}
	for _, o := range owner.Int64s() {
		if o != 0 {
			t.Errorf("request %s: image.owner %v, want zeros", r.ID, owner.Int64s())
		}
	}
}

// Concurrent requests of 0 to 4 images each: the adapter decodes each
// request's images (alone or grouped), the encoder groups their images,
// and every request gets its own.
func TestEndToEndConcurrent(t *testing.T) {
	for _, doc := range docs {
		for _, solo := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/solo=%v", filepath.Base(doc), solo), func(t *testing.T) {
				e, enc := open(t, doc, solo)
				rng := rand.New(rand.NewSource(7))
				var pics []pictures
				var reqs []vm.Request
				for i := range 24 {
					p := randomPictures(t, rng)
					pics = append(pics, p)
					reqs = append(reqs, p.request(fmt.Sprint("r", i), strings.Contains(doc, "grouped")))
				}
				for i, r := range e.RunAll(context.Background(), reqs) {
					check(t, pics[i], r)
				}
				if solo && enc.largest > 4 {
					t.Errorf("solo mode formed a group of %d images; one request brings at most 4", enc.largest)
				}
				st := e.Stats().Components
				t.Logf("largest encoder group: %d images; adapter: %d invocations for %d requests",
					enc.largest, st["image_preprocess"].Invocations, st["image_preprocess"].Requests)
			})
		}
	}
}

// A corrupt image fails its own request, naming the image; the requests
// beside it succeed. (Only where the adapter runs one request per
// invocation: a session returns one error for a whole group, so in
// image_grouped.yaml a corrupt image fails every request of its group.)
func TestEndToEndCorruptImageFailsOneRequest(t *testing.T) {
	for _, doc := range docs[:1] {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			e, _ := open(t, doc, false)
			rows := strings.Contains(doc, "grouped")
			rng := rand.New(rand.NewSource(11))
			good := randomPictures(t, rng)
			for len(good.colours) == 0 {
				good = randomPictures(t, rng)
			}
			bad := pictures{colours: good.colours[:1], encoded: [][]byte{good.encoded[0], []byte("definitely not an image")}}
			resps := e.RunAll(context.Background(), []vm.Request{good.request("good", rows), bad.request("bad", rows), good.request("good too", rows)})
			check(t, good, resps[0])
			check(t, good, resps[2])
			if resps[1].Err == nil {
				t.Fatal("the request with a corrupt image succeeded")
			}
			for _, frag := range []string{"run/input", "image_preprocess", "64 65 66 69"} {
				if !strings.Contains(resps[1].Err.Error(), frag) {
					t.Errorf("error %q does not mention %q", resps[1].Err, frag)
				}
			}
		})
	}
}

// TestEndToEndOwnerChecked: an adapter's owner companions are checked like
// any other: an owner map that disagrees with its offsets, or has the
// wrong length, fails its request only (run/owner, run/extent).
func TestEndToEndOwnerChecked(t *testing.T) {
	for _, doc := range docs {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			e, _ := open(t, doc, false)
			rows := strings.Contains(doc, "grouped")
			rng := rand.New(rand.NewSource(12))
			good := randomPictures(t, rng)
			for len(good.colours) < 2 {
				good = randomPictures(t, rng)
			}
			short := good.request("short", rows)
			short.Inputs["image_byte_owner"] = &backend.Tensor{DType: "int64", Shape: []int64{3}, Data: []int64{7, -1, 99}}
			wrong := good.request("wrong", rows)
			w := append([]int64(nil), wrong.Inputs["image_byte_owner"].Int64s()...)
			w[len(w)-1] = 0 // the last byte belongs to the last image, not the first
			wrong.Inputs["image_byte_owner"] = &backend.Tensor{DType: "int64", Shape: []int64{int64(len(w))}, Data: w}
			resps := e.RunAll(context.Background(), []vm.Request{good.request("good", rows), short, wrong})
			check(t, good, resps[0])
			for i, rule := range map[int]string{1: "run/extent", 2: "run/owner"} {
				var re *backend.RunError
				if !errors.As(resps[i].Err, &re) || re.Rule != rule || !strings.Contains(re.Message, "image_byte_owner") {
					t.Errorf("%s: %v, want %s naming image_byte_owner", resps[i].ID, resps[i].Err, rule)
				}
			}
		})
	}
}

// Requests of the grouped adapter give their images as items, one encoded
// image each (vm.ByteItems), with no offsets, owners or rows: every
// request gets its own images' embeddings, as in companion form.
func TestEndToEndByteItems(t *testing.T) {
	doc := docs[1]
	e, _ := open(t, doc, false)
	rng := rand.New(rand.NewSource(11))
	var pics []pictures
	var reqs []vm.Request
	for i := range 12 {
		p := randomPictures(t, rng)
		if len(p.encoded) == 0 {
			continue // zero items: one tensor of 0 rows, not an items list
		}
		pics = append(pics, p)
		reqs = append(reqs, vm.Request{ID: fmt.Sprint("r", i), Items: map[string][]vm.Item{"encoded_images": vm.ByteItems(p.encoded...)}})
	}
	for i, r := range e.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
		// The adapter produces the embeddings' level: they come back per
		// image, their offsets and owners left out.
		its := r.Items["embeddings"]
		if len(its) != len(pics[i].encoded) || r.Outputs.Get("embeddings") != nil || r.Outputs.Get("image.offsets") != nil || r.Outputs.Get("image.owner") != nil {
			t.Fatalf("%s: %d embeddings for %d images; outputs %v", r.ID, len(its), len(pics[i].encoded), r.Outputs)
		}
		n := int64(len(its))
		var data []float32
		for _, it := range its {
			data = append(data, it.Tensor.Float32s()...)
		}
		check(t, pics[i], vm.Response{ID: r.ID, Outputs: vm.OutputsOf(map[string]*backend.Tensor{
			"embeddings":    {DType: "float32", Shape: []int64{n, 3}, Data: data},
			"image.offsets": {DType: "int64", Shape: []int64{2}, Data: []int64{0, n}},
			"image.owner":   {DType: "int64", Shape: []int64{n}, Data: make([]int64, n)},
		})})
	}
}
