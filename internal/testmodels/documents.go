package testmodels

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Document is a committed requests document of a benchmark workload: the
// requests `genaic bench` and the Go benchmarks of vm/e2e run.
type Document struct {
	// Package is the fixture's folder under testdata/packages.
	Package string
	// File is the document's name inside the package folder.
	File string
	// Summary says what the requests hold.
	Summary  string
	requests func(rng *rand.Rand) []Request
	seed     uint64
}

// Request is one request of a document: its id and its inputs by name.
type Request struct {
	ID     string
	Inputs []Input
}

// Input is one named input of a request, in the document's order.
type Input struct {
	Name   string
	Tensor Tensor
}

// documentRequests is how many requests each benchmark document holds.
const documentRequests = 64

// Documents returns every committed requests document, in a fixed order.
func Documents() []*Document {
	short, long := [2]int{1, 8}, [2]int{4, 32}
	return []*Document{
		{Package: "text_packed", File: "requests.json", Summary: "short segments: 1–4 per request, 1–8 tokens each", seed: 1,
			requests: textRequests(short, packedText)},
		{Package: "text_packed", File: "requests_long.json", Summary: "long segments: 1–4 per request, 4–32 tokens each", seed: 2,
			requests: textRequests(long, packedText)},
		{Package: "text_padded", File: "requests.json", Summary: "short segments: 1–4 per request, 1–8 tokens each", seed: 1,
			requests: textRequests(short, paddedText)},
		{Package: "text_padded", File: "requests_long.json", Summary: "long segments: 1–4 per request, 4–32 tokens each", seed: 2,
			requests: textRequests(long, paddedText)},
		{Package: "image_padded", File: "requests64.json", Summary: "1–3 images per request, a patch extent in [1, 8] per request", seed: 3,
			requests: imageRequests},
	}
}

// Path returns the document's path relative to the repository root.
func (d *Document) Path() string {
	return "testdata/packages/" + d.Package + "/" + d.File
}

// Requests returns the document's requests; they are a pure function of
// the source.
func (d *Document) Requests() []Request {
	return d.requests(rand.New(rand.NewPCG(d.seed, 0x5eed)))
}

// Bytes returns the document as genaic run reads it: one request a line.
func (d *Document) Bytes() []byte {
	var b bytes.Buffer
	b.WriteString("{\"requests\": [\n")
	for i, r := range d.Requests() {
		fmt.Fprintf(&b, "  {\"id\": %q, \"inputs\": {", r.ID)
		for j, in := range r.Inputs {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q: ", in.Name)
			writeTensor(&b, in.Tensor)
		}
		b.WriteString("}}")
		if i < documentRequests-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

func writeTensor(b *bytes.Buffer, t Tensor) {
	fmt.Fprintf(b, "{\"dtype\": %q, \"shape\": [", t.DType())
	for i, d := range t.Shape {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteString("], \"data\": [")
	for i, v := range t.I64 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	for i, v := range t.F32 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(v), 'g', -1, 32))
	}
	b.WriteString("]}")
}

// textLayout builds one text request's inputs from its segments' token ids.
type textLayout func(segments [][]int64) []Input

// textRequests draws requests of 1–4 segments whose token counts lie in
// tokens (inclusive), laid out by layout.
func textRequests(tokens [2]int, layout textLayout) func(rng *rand.Rand) []Request {
	return func(rng *rand.Rand) []Request {
		reqs := make([]Request, documentRequests)
		for i := range reqs {
			segments := make([][]int64, 1+rng.IntN(4))
			for s := range segments {
				ids := make([]int64, tokens[0]+rng.IntN(tokens[1]-tokens[0]+1))
				for t := range ids {
					ids[t] = rng.Int64N(encVocab)
				}
				segments[s] = ids
			}
			reqs[i] = Request{ID: fmt.Sprintf("r%02d", i), Inputs: layout(segments)}
		}
		return reqs
	}
}

// packedText lays segments out as text_packed reads them: every token on
// one axis, with both levels' companions (the request is one row).
func packedText(segments [][]int64) []Input {
	var ids, counts []int64
	for _, s := range segments {
		ids = append(ids, s...)
		counts = append(counts, int64(len(s)))
	}
	offs := offsetsOf(counts)
	rows := offsetsOf([]int64{int64(len(segments))})
	return []Input{
		{"token_ids", vec(ids)},
		{"token_offsets", vec(offs)},
		{"token_owner", vec(ownerOf(offs))},
		{"segment_offsets", vec(rows)},
		{"segment_owner", vec(ownerOf(rows))},
	}
}

// paddedText lays segments out as text_padded reads them: one row of ids
// per segment, right-padded with id 0 to the request's longest segment.
func paddedText(segments [][]int64) []Input {
	extent := 0
	for _, s := range segments {
		extent = max(extent, len(s))
	}
	ids := make([]int64, len(segments)*extent)
	lengths := make([]int64, len(segments))
	for i, s := range segments {
		copy(ids[i*extent:], s)
		lengths[i] = int64(len(s))
	}
	rows := offsetsOf([]int64{int64(len(segments))})
	return []Input{
		{"token_ids", Int64([]int64{int64(len(segments)), int64(extent)}, ids)},
		{"token_lengths", vec(lengths)},
		{"segment_offsets", vec(rows)},
		{"segment_owner", vec(ownerOf(rows))},
	}
}

// imageRequests draws image_padded requests of 1–3 images sharing a patch
// extent in [1, 8], each image's valid length in [1, extent], features
// multiples of 1/16 and zeros in the padding.
func imageRequests(rng *rand.Rand) []Request {
	reqs := make([]Request, documentRequests)
	for i := range reqs {
		n, extent := 1+rng.IntN(3), 1+rng.IntN(8)
		px := make([]float32, n*extent*imageFeatures)
		lengths := make([]int64, n)
		for j := range lengths {
			lengths[j] = 1 + rng.Int64N(int64(extent))
			for k := range int(lengths[j]) * imageFeatures {
				px[j*extent*imageFeatures+k] = float32(rng.IntN(65)-32) / 16
			}
		}
		rows := offsetsOf([]int64{int64(n)})
		reqs[i] = Request{ID: fmt.Sprintf("r%02d", i), Inputs: []Input{
			{"pixel_patches", Float32([]int64{int64(n), int64(extent), imageFeatures}, px)},
			{"patch_lengths", vec(lengths)},
			{"image_offsets", vec(rows)},
			{"image_owner", vec(ownerOf(rows))},
		}}
	}
	return reqs
}

func vec(v []int64) Tensor { return Int64([]int64{int64(len(v))}, v) }

// offsetsOf is [0, c0, c0+c1, ...].
func offsetsOf(counts []int64) []int64 {
	offs := []int64{0}
	for _, c := range counts {
		offs = append(offs, offs[len(offs)-1]+c)
	}
	return offs
}

// ownerOf maps each child position to the unit whose offsets span it.
func ownerOf(offs []int64) []int64 {
	var owner []int64
	for u := 0; u+1 < len(offs); u++ {
		for range offs[u+1] - offs[u] {
			owner = append(owner, int64(u))
		}
	}
	return owner
}
