package serve

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// jsonDtypes are the dtypes a tensor's JSON data may be decoded as.
var jsonDtypes = []string{"bool", "float32", "float64", "int8", "int16", "int32", "int64",
	"uint8", "uint16", "uint32", "uint64", "float16", "bfloat16"}

// TestFastJSONTakesCommonData: the data clients send (flat or nested
// numbers, white space, exponents, nulls, booleans) is read by the fast
// path, with the values the slow path reads.
func TestFastJSONTakesCommonData(t *testing.T) {
	for _, c := range []struct {
		dtype string
		shape []int64
		data  string
	}{
		{"float32", []int64{2, 3}, `[[0.5, -1.25e-3, 3], [1E+2, -0, null]]`},
		{"float64", []int64{4}, "[ 1.7976931348623157e308 ,\n\t2.5e-324, 0.1, -7 ]"},
		{"int64", []int64{3}, `[9223372036854775807, -9223372036854775808, 0]`},
		{"int8", []int64{2, 1}, `[[-128], [127]]`},
		{"uint8", []int64{3}, `[0, 255, null]`},
		{"uint16", []int64{1}, `[65535]`},
		{"bool", []int64{3}, `[true, false, null]`},
		{"float16", []int64{2}, `[1.5, 65504]`},
		{"bfloat16", []int64{2}, `[-2.75, 3e38]`},
		{"float32", []int64{0}, `[]`},
		{"float32", []int64{1, 0}, `[[]]`},
	} {
		fast, ok := fastJSON(c.dtype, c.shape, []byte(c.data))
		if !ok {
			t.Errorf("%s %v %s: the fast path refused it", c.dtype, c.shape, c.data)
			continue
		}
		slow, err := slowJSON("x", c.dtype, c.shape, []byte(c.data))
		if err != nil {
			t.Fatalf("%s %s: the slow path refused it: %v", c.dtype, c.data, err)
		}
		if !bytes.Equal(toBytes(fast), toBytes(slow)) {
			t.Errorf("%s %s: fast %v, slow %v", c.dtype, c.data, fast.Data, slow.Data)
		}
	}
}

// TestFastJSONLeavesMistakes: what encoding/json refuses, or reads
// otherwise, the fast path leaves to the slow path.
func TestFastJSONLeavesMistakes(t *testing.T) {
	for _, c := range []struct {
		dtype, data string
	}{
		{"float32", `["1"]`}, {"float32", `[true]`}, {"float32", `[{"a":1}]`},
		{"float32", `[1e39]`}, {"float32", `[01]`}, {"float32", `[1.]`}, {"float32", `[.5]`},
		{"float32", `[+1]`}, {"float32", `[inf]`}, {"float32", `[0x10]`}, {"float32", `[1,]`},
		{"float32", `[1 2]`}, {"float32", `[1`}, {"float32", `[1] x`}, {"float32", `1`},
		{"float32", `[nul]`}, {"float32", `[1,,2]`}, {"float32", `[,1]`}, {"float32", `[[1]2]`},
		{"int8", `[128]`}, {"int64", `[1.0]`}, {"int64", `[1e2]`}, {"uint8", `[-1]`},
		{"uint64", `[-0]`}, {"bool", `[1]`}, {"float16", `["x"]`},
		{"float32", strings.Repeat("[", 34) + "1" + strings.Repeat("]", 34)},
	} {
		if _, ok := fastJSON(c.dtype, []int64{1}, []byte(c.data)); ok {
			t.Errorf("%s %s: the fast path took it", c.dtype, c.data)
		}
	}
	// 33 arrays deep is as deep as the slow path nests, and both read it.
	deep := strings.Repeat("[", 33) + "1" + strings.Repeat("]", 33)
	if _, ok := fastJSON("float32", []int64{1}, []byte(deep)); !ok {
		t.Error("the fast path refused arrays 33 deep")
	}
	if _, err := slowJSON("x", "float32", []int64{1}, []byte(deep)); err != nil {
		t.Errorf("the slow path refused arrays 33 deep: %v", err)
	}
	// A count other than the shape's.
	for _, data := range []string{`[1, 2]`, `[]`} {
		if _, ok := fastJSON("float32", []int64{1}, []byte(data)); ok {
			t.Errorf("%s: the fast path took it for shape [1]", data)
		}
	}
}

// FuzzJSONData: whatever data the fast path reads, the slow path reads
// too, with the same bytes, for every dtype and a shape of the leaves'
// count; whatever it refuses, the slow path refuses too (it only names
// the mistake: no data a request may carry is read element by element);
// and neither panics.
func FuzzJSONData(f *testing.F) {
	for _, s := range []string{`[1, 2.5, -3e2]`, `[[1], [2], [null]]`, `[true, false]`,
		`[1e39, 1]`, `[ 0 , -0.0 ]`, `[[[1]], [[2]]]`, `[-128, 255, 65535]`, `[1.5e-45]`} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		dtype := jsonDtypes[int(which)%len(jsonDtypes)]
		// Shapes of the count the data may hold, and one of one element.
		n := int64(bytes.Count(data, []byte(","))) + 1
		for _, shape := range [][]int64{{n}, {1}, {0}} {
			fast, ok := fastJSON(dtype, shape, data)
			slow, err := slowJSON("x", dtype, shape, data)
			if !ok {
				if err == nil {
					t.Fatalf("%s %v %q: the fast path refused it, the slow path read it", dtype, shape, data)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %v %q: the fast path read it, the slow path refused it: %v", dtype, shape, data, err)
			}
			if !bytes.Equal(toBytes(fast), toBytes(slow)) {
				t.Fatalf("%s %v %q: fast %v, slow %v", dtype, shape, data, fast.Data, slow.Data)
			}
		}
	})
}

// BenchmarkJSONData times the fast and slow paths on one 3×224×224
// image's data as clients write it (shortest float32 text), interleaved.
//
//	go test ./serve -run '^$' -bench JSONData -benchtime 20x
func BenchmarkJSONData(b *testing.B) {
	shape := []int64{1, 3, 224, 224}
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range 3 * 224 * 224 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprint(&sb, float32(math.Sin(float64(i))))
	}
	sb.WriteByte(']')
	data := []byte(sb.String())
	var fast, slow float64
	for b.Loop() {
		start := time.Now()
		if _, ok := fastJSON("float32", shape, data); !ok {
			b.Fatal("the fast path refused the image")
		}
		mid := time.Now()
		if _, err := slowJSON("x", "float32", shape, data); err != nil {
			b.Fatal(err)
		}
		fast += mid.Sub(start).Seconds()
		slow += time.Since(mid).Seconds()
	}
	mb := float64(len(data)) * float64(b.N) / 1e6
	b.ReportMetric(mb/fast, "fast-MB/s")
	b.ReportMetric(mb/slow, "slow-MB/s")
	b.ReportMetric(slow/fast, "slow/fast")
}
