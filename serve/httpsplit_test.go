package serve

import (
	"fmt"
	"math"
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
	md := s.models["image_padded"]
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
