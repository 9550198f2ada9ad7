package e2e

import (
	"fmt"
	"testing"
	"time"
)

// garbageSink keeps BenchmarkGarbage's allocations from being optimised
// away until the next document drops them.
var garbageSink [][]byte

// BenchmarkGarbage measures what the collector charges a workload for
// garbage that is not its own: the ideal's direct calls on the 64 images,
// in blocks of 20 documents alternated with blocks of the same calls
// that each first allocate (and drop) KB kilobytes in N objects, or write
// as much into memory kept from the start (write: the same stores, no
// garbage). extra-us/doc is what the garbage added to a document. It is
// how an allocation a document is judged in time (RATIONALE, "Released
// responses give their memory back").
//
//	go test ./vm/e2e -run '^$' -bench Garbage -benchtime 50x -count 3
func BenchmarkGarbage(b *testing.B) {
	var w workload
	for _, ww := range workloads {
		if ww.name == "image_padded/64" {
			w = ww
		}
	}
	for _, c := range []struct {
		kb, n int
		write bool
	}{{16, 4, false}, {16, 40, false}, {16, 40, true}, {4, 10, false}} {
		name := fmt.Sprintf("kb=%d/objects=%d", c.kb, c.n)
		if c.write {
			name = fmt.Sprintf("kb=%d/write", c.kb)
		}
		b.Run(name, func(b *testing.B) {
			s := newBench(b, w)
			ideal := s.ideal
			ideal()
			size := c.kb << 10 / c.n
			kept := make([][]byte, c.n)
			for i := range kept {
				kept[i] = make([]byte, size)
			}
			dirty := func() {
				if c.write {
					for _, k := range kept {
						clear(k)
					}
					return
				}
				garbageSink = garbageSink[:0]
				for range c.n {
					garbageSink = append(garbageSink, make([]byte, size))
				}
			}
			const block = 20
			var plain, with time.Duration
			for b.Loop() {
				start := time.Now()
				for range block {
					ideal()
				}
				plain += time.Since(start)
				start = time.Now()
				for range block {
					dirty()
					ideal()
				}
				with += time.Since(start)
			}
			b.ReportMetric((with-plain).Seconds()*1e6/float64(b.N*block), "extra-us/doc")
			b.ReportMetric(plain.Seconds()/with.Seconds(), "plain/with")
			b.ReportMetric(0, "ns/op")
		})
	}
}
