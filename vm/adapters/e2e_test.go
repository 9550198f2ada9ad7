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
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
// beside it succeed. Where the adapter groups (image_grouped.yaml), the
// image's header is read at admission (the adapter's key), so the request
// fails there, before it can join a group.
func TestEndToEndCorruptImageFailsOneRequest(t *testing.T) {
	for _, doc := range docs {
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

// solid encodes an h×w image of one colour as PNG.
func solid(t *testing.T, c color.NRGBA, h, w int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// aspects are image sizes (height, width) whose resize to a height of 4
// makes widths 2, 4, 8 and 6.
var aspects = [][2]int{{8, 4}, {4, 4}, {2, 4}, {6, 9}}

// widthPictures draws n requests of one solid image each, of the aspects
// above.
func widthPictures(t *testing.T, rng *rand.Rand, n int) []pictures {
	var out []pictures
	for range n {
		c := color.NRGBA{R: uint8(rng.Intn(256)), G: uint8(rng.Intn(256)), B: uint8(rng.Intn(256)), A: 255}
		a := aspects[rng.Intn(len(aspects))]
		out = append(out, pictures{colours: []color.NRGBA{c}, encoded: [][]byte{solid(t, c, a[0], a[1])}})
	}
	return out
}

// TestEndToEndWidthsGroupByKey: a grouped adapter whose resize keeps each
// image's aspect (image_widths.yaml) groups by the width its images make,
// read from their headers at admission: concurrent requests of four
// widths all succeed, grouped equal to solo, with groups of more than one
// request, no call failed and no group run again (the stats say so).
func TestEndToEndWidthsGroupByKey(t *testing.T) {
	doc := "testdata/image_widths.yaml"
	pics := widthPictures(t, rand.New(rand.NewSource(5)), 32)
	var reqs []vm.Request
	for i, p := range pics {
		reqs = append(reqs, p.request(fmt.Sprint("r", i), true))
	}
	var answers [2][]vm.Response
	for k, solo := range []bool{false, true} {
		e, _ := open(t, doc, solo)
		answers[k] = e.RunAll(context.Background(), reqs)
		for i, r := range answers[k] {
			check(t, pics[i], r)
		}
		st := e.Stats().Components["image_preprocess"]
		if st.Failed != 0 || st.Regrouped != 0 {
			t.Errorf("solo=%v: %d adapter calls failed, %d groups ran again; want none", solo, st.Failed, st.Regrouped)
		}
		if !solo && st.MaxGroupRequests < 2 {
			t.Errorf("the adapter formed no group of two requests (group sizes %v)", st.GroupSizes)
		}
	}
	for i := range reqs {
		g, s := answers[0][i].Outputs.Get("embeddings"), answers[1][i].Outputs.Get("embeddings")
		if !reflect.DeepEqual(g.Float32s(), s.Float32s()) {
			t.Errorf("request %d: grouped %v, solo %v", i, g.Float32s(), s.Float32s())
		}
	}
}

// TestEndToEndWidthsItems: a request's byte items whose images make
// different widths run as one part per width, each item answered as it is
// alone; a request that packs such images into one tensor itself fails at
// admission, naming the image and the widths, and costs no invocation.
func TestEndToEndWidthsItems(t *testing.T) {
	doc := "testdata/image_widths.yaml"
	e, _ := open(t, doc, false)
	rng := rand.New(rand.NewSource(9))
	pics := widthPictures(t, rng, 5)
	var all pictures
	for _, p := range pics {
		all.colours = append(all.colours, p.colours...)
		all.encoded = append(all.encoded, p.encoded...)
	}
	r := e.Run(context.Background(), vm.Request{ID: "mixed", Items: map[string][]vm.Item{"encoded_images": vm.ByteItems(all.encoded...)}})
	if r.Err != nil {
		t.Fatalf("items of mixed widths: %v", r.Err)
	}
	its := r.Items["embeddings"]
	if len(its) != len(all.encoded) {
		t.Fatalf("%d embeddings for %d images", len(its), len(all.encoded))
	}
	for i, p := range pics {
		alone := e.Run(context.Background(), p.request("alone", true))
		if alone.Err != nil || !reflect.DeepEqual(its[i].Tensor.Float32s(), alone.Outputs.Get("embeddings").Float32s()) {
			t.Errorf("item %d: %v, alone %v (%v)", i, its[i].Tensor.Float32s(), alone.Outputs.Get("embeddings"), alone.Err)
		}
	}

	before := e.Stats().Components["image_preprocess"].Invocations
	wide, narrow := pictures{colours: pics[0].colours, encoded: [][]byte{solid(t, pics[0].colours[0], 2, 4)}}, solid(t, pics[0].colours[0], 8, 4)
	wide.encoded = append(wide.encoded, narrow)
	wide.colours = append(wide.colours, pics[0].colours[0])
	bad := e.Run(context.Background(), wide.request("packed", true))
	var re *backend.RunError
	if !errors.As(bad.Err, &re) || re.Rule != "run/input" || !strings.Contains(re.Message, "image 1") ||
		!strings.Contains(re.Message, "width 2") || !strings.Contains(re.Message, "width 8") || !strings.Contains(re.Message, "as items") {
		t.Errorf("images of two widths in one tensor: %v; want run/input naming image 1, both widths and items", bad.Err)
	}
	if after := e.Stats().Components["image_preprocess"].Invocations; after != before {
		t.Errorf("the refused request cost %d adapter invocations", after-before)
	}
}

// TestEndToEndRefusedPartSpendsNothing: a request whose items run as two
// parts (two widths), one of them an image too wide for the encoder's
// budget on its own, fails run/budget without its other part reaching the
// encoder: no invocation is spent on a request that fails, whether it runs
// alone or among others, and the requests beside it are answered.
func TestEndToEndRefusedPartSpendsNothing(t *testing.T) {
	doc := "testdata/image_widths.yaml"
	e, _ := open(t, doc, false)
	c := color.NRGBA{R: 40, G: 80, B: 120, A: 255}
	narrow, wide := solid(t, c, 4, 4), solid(t, c, 2, 40) // widths 4 and 80 once resized
	mixed := vm.Request{ID: "mixed", Items: map[string][]vm.Item{"encoded_images": vm.ByteItems(narrow, wide, narrow)}}
	fine := pictures{colours: []color.NRGBA{c}, encoded: [][]byte{narrow}}
	refused := func(r vm.Response) {
		t.Helper()
		var re *backend.RunError
		if !errors.As(r.Err, &re) || re.Rule != "run/budget" {
			t.Errorf("%s: %v, want run/budget", r.ID, r.Err)
		}
	}
	encoder := func() int64 { return e.Stats().Components["encoder"].Invocations }
	before := encoder()
	refused(e.Run(context.Background(), mixed))
	if n := encoder() - before; n != 0 {
		t.Errorf("the refused request alone cost %d encoder invocations", n)
	}
	resps := e.RunAll(context.Background(), []vm.Request{fine.request("a", true), mixed, fine.request("b", true)})
	check(t, fine, resps[0])
	check(t, fine, resps[2])
	refused(resps[1])
	if got := e.Stats().Components["encoder"].Requests; got != 2 {
		t.Errorf("the encoder answered %d requests; want the 2 that succeed", got)
	}
}

// One image a request on a request_aligned port: a request of two images,
// given as a tensor or as items, is refused at admission, alone, saying
// why; the requests beside it are grouped and answered, and no invocation
// of the adapter fails (a group failed by one request would be run again
// one request at a time).
func TestEndToEndOneImageARow(t *testing.T) {
	e, _ := open(t, "testdata/image_aligned.yaml", false)
	rng := rand.New(rand.NewSource(31))
	var reqs []vm.Request
	var pics []pictures
	for i := range 24 {
		var p pictures
		for len(p.encoded) == 0 || i%5 == 0 && len(p.encoded) < 2 || i%5 != 0 && len(p.encoded) != 1 {
			p = randomPictures(t, rng)
		}
		r := p.request(fmt.Sprint("r", i), true)
		if i%2 == 1 {
			r = vm.Request{ID: r.ID, Items: map[string][]vm.Item{"encoded_images": vm.ByteItems(p.encoded...)}}
		}
		reqs, pics = append(reqs, r), append(pics, p)
	}
	for i, r := range e.RunAll(context.Background(), reqs) {
		p := pics[i]
		if n := len(p.encoded); n != 1 {
			if r.Err == nil || !strings.Contains(r.Err.Error(), "run/input") || !strings.Contains(r.Err.Error(), fmt.Sprintf("row 0 brings %d images", n)) {
				t.Errorf("request %s of %d images: %v, want run/input naming its row", r.ID, n, r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Fatalf("request %s: %v", r.ID, r.Err)
		}
		emb := r.Outputs.Get("embeddings")
		if emb == nil || !slices.Equal(emb.Shape, []int64{1, 3}) {
			t.Fatalf("request %s: embeddings %v, want [1, 3]", r.ID, emb)
		}
		c := p.colours[0]
		for k, v := range []uint8{c.R, c.G, c.B} {
			if got, want := float64(emb.Float32s()[k]), (float64(v)/255-0.5)/0.5; math.Abs(got-want) > 6.0/255 {
				t.Errorf("request %s channel %d = %v, want %v", r.ID, k, got, want)
			}
		}
	}
	st := e.Stats().Components["image_preprocess"]
	if st.Failed != 0 || st.Regrouped != 0 || st.MaxGroupRequests < 2 {
		t.Errorf("the adapter: %d calls failed, %d groups run again, largest group %d requests: want none failed, groups", st.Failed, st.Regrouped, st.MaxGroupRequests)
	}
}

// An adapter without batch_capacity runs each request alone, unkeyed: a
// request of two images for its one-image row is refused before either is
// decoded, so its error is the row's, not the second image's corruption.
func TestOneImageARowBeforeDecoding(t *testing.T) {
	doc, err := os.ReadFile("testdata/image_aligned.yaml")
	if err != nil {
		t.Fatal(err)
	}
	grouping := "        batch_capacity:\n          budgets:\n            - { dimensions: [images], max_total: 6 }\n            - { dimensions: [bytes], max_total: 1000000 }\n"
	if !strings.Contains(string(doc), grouping) {
		t.Fatal("image_aligned.yaml's adapter budgets moved")
	}
	path := filepath.Join(t.TempDir(), "image_alone.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(doc), grouping, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	e, _ := open(t, path, false)
	rng := rand.New(rand.NewSource(3))
	var p pictures
	for len(p.encoded) < 2 {
		p = randomPictures(t, rng)
	}
	p.encoded[1] = []byte("\x89PNG\r\n\x1a\n but no image")
	r := e.RunAll(context.Background(), []vm.Request{p.request("two", true)})[0]
	if r.Err == nil || !strings.Contains(r.Err.Error(), fmt.Sprintf("row 0 brings %d images", len(p.encoded))) {
		t.Fatalf("a request of %d images, one corrupt: %v, want its row refused", len(p.encoded), r.Err)
	}
}

// TestEndToEndUndecodableImageFailsItsRequestOnce: an image whose header
// reads but whose data does not decode (cut short) reaches a group of the
// grouped adapter; the adapter lays the failure at its request's row, so
// that request fails with the error it meets alone and the group's other
// requests run again as one group: one failed call and one call more,
// not a call per request. The six images are one group's (its budget).
func TestEndToEndUndecodableImageFailsItsRequestOnce(t *testing.T) {
	doc := docs[1]
	e, _ := open(t, doc, false)
	rng := rand.New(rand.NewSource(13))
	var goods []pictures
	for len(goods) < 5 {
		if p := randomPictures(t, rng); len(p.colours) > 0 {
			goods = append(goods, pictures{colours: p.colours[:1], encoded: p.encoded[:1]})
		}
	}
	img := image.NewNRGBA(image.Rect(0, 0, 9, 7))
	var whole bytes.Buffer
	if err := png.Encode(&whole, img); err != nil {
		t.Fatal(err)
	}
	cut := pictures{colours: goods[0].colours[:1], encoded: [][]byte{goods[0].encoded[0], whole.Bytes()[:whole.Len()-20]}}
	reqs := []vm.Request{goods[1].request("a", true), goods[2].request("b", true), cut.request("cut", true), goods[3].request("c", true), goods[4].request("d", true)}
	before := e.Stats().Components["image_preprocess"]
	resps := e.RunAll(context.Background(), reqs)
	after := e.Stats().Components["image_preprocess"]
	for i, k := range []int{0, 1, 3, 4} {
		check(t, goods[1+i], resps[k])
	}
	wantFailedAloneOnce(t, resps[2], e.Run(context.Background(), reqs[2]), "image 1 of input port", before, after, 4)
}

// wantFailedAloneOnce checks a request whose media did not decode in a
// group of the adapter, answered got there and alone when run by itself:
// the same error, naming what, and the adapter's stats from before to
// after the group show one failed call and the group's other requests,
// rest of them, run again as one group.
func wantFailedAloneOnce(t *testing.T, got, alone vm.Response, what string, before, after vm.ComponentStats, rest int) {
	t.Helper()
	if got.Err == nil || alone.Err == nil || got.Err.Error() != alone.Err.Error() {
		t.Fatalf("the request with undecodable media: %v; alone: %v; want the same error", got.Err, alone.Err)
	}
	if !strings.Contains(alone.Err.Error(), what) {
		t.Errorf("alone, the error %q does not name %q", alone.Err, what)
	}
	groups, failed, regrouped := after.Invocations-before.Invocations, after.Failed-before.Failed, after.Regrouped-before.Regrouped
	if after.MaxGroupRequests != rest || failed != 1 || regrouped != 1 || groups != 1 {
		t.Errorf("largest group %d requests, %d failed calls, %d regrouped, %d calls answered: want one failed, the other %d requests run again as one group",
			after.MaxGroupRequests, failed, regrouped, groups, rest)
	}
}
