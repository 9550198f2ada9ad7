package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSplitDataFindsData: a plain request's data values are split off
// where they lie, strings and nested parameters notwithstanding; the
// forms whose whole decoding could differ are left to it.
func TestSplitDataFindsData(t *testing.T) {
	header := `{"id":"[\"{","parameters":{"p":[{"q":"]"}]},"inputs":[` +
		`{"name":"a","data":[[1, 2], [3, 4]],"shape":[2,2]},` +
		`{"name":"b","parameters":{"binary_data_size":8}},` +
		`{"Data":["x]"],"name":"c"}],"outputs":[{"name":"y"}]}`
	stripped, spans, ok := splitData([]byte(header))
	if !ok || len(spans) != 3 || spans[1] != nil {
		t.Fatalf("ok %v, spans %v", ok, spans)
	}
	for i, want := range map[int]string{0: `[[1, 2], [3, 4]]`, 2: `["x]"]`} {
		if got := header[spans[i].start:spans[i].end]; got != want {
			t.Errorf("input %d: data %s, want %s", i, got, want)
		}
	}
	if want := `{"id":"[\"{","parameters":{"p":[{"q":"]"}]},"inputs":[{"name":"a","data":null,"shape":[2,2]},{"name":"b","parameters":{"binary_data_size":8}},{"Data":null,"name":"c"}],"outputs":[{"name":"y"}]}`; string(stripped) != want {
		t.Errorf("stripped:\n%s\nwant\n%s", stripped, want)
	}
	for _, h := range []string{
		`{"inputs":[{"data":[1]}],"Inputs":[]}`,
		`{"inputs":[{"data":[1],"DATA":[2]}]}`,
		`{"inputs":[{"d\u0061ta":[1]}]}`,
		`{"\u0069nputs":[{"data":[1]}]}`,
		`[{"inputs":[]}]`,
	} {
		if _, _, ok := splitData([]byte(h)); ok {
			t.Errorf("%s: split, where the whole decoding may differ", h)
		}
	}
}

// BenchmarkDecodeHTTP decodes an inference request carrying one image of
// 150,528 FP32 values as JSON numbers (1.7 MB), with its data split off
// (httpsplit.go) and whole, interleaved, and reports each in ms.
//
//	go test ./serve -run '^$' -bench DecodeHTTP -benchtime 20x -count 3
func BenchmarkDecodeHTTP(b *testing.B) {
	s := newServer(b, Config{Repo: repo(b, "image_padded"), NoWarmup: true})
	md := s.model("image_padded")
	var sb strings.Builder
	sb.WriteString(`{"id":"a","inputs":[{"name":"pixel_patches","shape":[1,18816,8],"datatype":"FP32","data":[`)
	for i := range 18816 * 8 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprint(&sb, float32(math.Sin(float64(i))))
	}
	sb.WriteString(`]},{"name":"patch_lengths","shape":[1],"datatype":"INT64","data":[18816]},` +
		`{"name":"image_offsets","shape":[2],"datatype":"INT64","data":[0,1]},{"name":"image_owner","shape":[1],"datatype":"INT64","data":[0]}]}`)
	body := []byte(sb.String())
	var split, whole time.Duration
	for b.Loop() {
		for _, w := range []bool{false, true} {
			s.wholeJSON = w
			start := time.Now()
			if _, _, _, _, err := s.decodeHTTP(md, "", body); err != nil {
				b.Fatal(err)
			}
			if w {
				whole += time.Since(start)
			} else {
				split += time.Since(start)
			}
		}
	}
	s.wholeJSON = false
	b.ReportMetric(split.Seconds()*1e3/float64(b.N), "split-ms")
	b.ReportMetric(whole.Seconds()*1e3/float64(b.N), "whole-ms")
	b.ReportMetric(0, "ns/op") // the sum of both ways means nothing
}

// TestDecodeFixedReadsUsualRequests: the requests clients send are read
// by the fixed decoder, as encoding/json reads them; the others are left
// to encoding/json.
func TestDecodeFixedReadsUsualRequests(t *testing.T) {
	usual := []string{
		`{"id":"a","parameters":{"timeout":"50ms","binary_data_output":true},"inputs":[` +
			`{"name":"x","shape":[2,1],"datatype":"FP32","data":[[1.5],[-2e-3]]},` +
			`{"name":"y","shape":[3],"datatype":"INT64","parameters":{"binary_data_size":24}}],` +
			`"outputs":[{"name":"z","parameters":{"binary_data":true}},{"name":"w"}]}`,
		`{"inputs":[]}`,
		` {"Inputs":null,"other":{"k":[1,"v"]}} `,
	}
	for _, h := range usual {
		got, ok := decodeFixed([]byte(h))
		if !ok {
			t.Errorf("%s: the fixed decoder refused it", h)
			continue
		}
		want, err := decodeJSON([]byte(h))
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Inputs {
			want.Inputs[i].Data, got.Inputs[i].Data = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", h, got, want)
		}
	}
	for _, h := range []string{
		`{"id":"a\u0062"}`, `{"id":1}`, `{"inputs":[{"shape":[1.0]}]}`, `{"inputs":[null]}`,
		`{"id":"a","ID":"b"}`, `{"parameters":{"t":1e400}}`, `{"x":[1,]}`, "{\"id\":\"\x01\"}",
		`{"inputs":[{"name":"x","shape":[+1]}]}`, `[{}]`,
	} {
		if _, ok := decodeFixed([]byte(h)); ok {
			t.Errorf("%s: the fixed decoder took it", h)
		}
	}
}

// FuzzDecodeFixed: whatever header the fixed decoder reads, encoding/json
// reads into the same request, inputs' data included (their text), or
// refuses only for an input's data that is not JSON, which the data's
// reader refuses in turn.
func FuzzDecodeFixed(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","parameters":{"timeout":"50ms","n":1.5e3,"l":[1,{"x":null}]},"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1,2]},` +
			`{"name":"y","shape":[],"datatype":"INT64","parameters":{"binary_data_size":8}}],"outputs":[{"name":"z","parameters":{"binary_data":true}}]}`,
		`{"ID":"é","Inputs":null,"OUTPUTS":[],"other":{"k":[1,"v"]}}`,
		`{"inputs":[{"name":"x","shape":[1],"data":[1,]}]}`,
		`{"inputs":[{"Name":"x","Shape":[-0],"DATA":"s","Parameters":{}}]}`,
		`{"id":"a\"b","parameters":{"k":"\n"},"inputs":[{"name":"x\u00e9","datatype":"\/"}]}`,
		`{"parameters":{"k\u00e9":1}}`,
		// An input's numeric binary_data_size is kept apart from its
		// other parameters (liftSize), the last of a key given twice
		// winning, as in encoding/json's map.
		`{"inputs":[{"name":"x","parameters":{"binary_data_size":"8","binary_data_size":8}}]}`,
		`{"inputs":[{"name":"x","parameters":{"binary_data_size":8,"binary_data_size":null}}]}`,
		`{"inputs":[{"name":"x","parameters":{"binary_data_size":8,"k":[1]}},{"name":"y","parameters":{}}]}`,
		`{"parameters":{"binary_data_size":8},"outputs":[{"name":"z","parameters":{"binary_data_size":8}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, header []byte) {
		got, ok := decodeFixed(header)
		if !ok {
			return
		}
		want, err := decodeJSON(header)
		if err != nil {
			for _, in := range got.Inputs {
				if in.Data != nil && !json.Valid(in.Data) {
					return
				}
			}
			t.Fatalf("%q: the fixed decoder read it, encoding/json refused it: %v", header, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nfixed %+v\n json %+v", header, got, want)
		}
	})
}

// BenchmarkDecodeBinary decodes the text example's first request as
// genaic bench sends it over HTTP (a JSON header, binary data after it),
// from a body read as the server reads one: what a small request's
// decoding costs the server.
//
//	go test ./serve -run '^$' -bench DecodeBinary -benchmem
func BenchmarkDecodeBinary(b *testing.B) {
	s := newServer(b, Config{Repo: repo(b, "text_packed"), NoWarmup: true})
	md := s.model("text_packed")
	reqs, err := readRequests(md.Dir)
	if err != nil {
		b.Fatal(err)
	}
	raw, n, err := EncodeHTTP(reqs[0], true)
	if err != nil {
		b.Fatal(err)
	}
	hlen := strconv.Itoa(n)
	body, err := readBody(bytes.NewReader(raw), int64(len(raw)), int64(len(raw)), hlen)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, _, err := s.decodeHTTP(md, hlen, body); err != nil {
			b.Fatal(err)
		}
	}
}
