// Package testmedia makes encoded media for tests of the adapters and
// the runtime's limits. It imports nothing of genaic, so that the tests of
// any package may use it.
package testmedia

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
)

// ZeroPNG is a valid grey PNG of w×h zero pixels, compressed row by row
// so that it is never held whole: a few hundred kilobytes that decode to
// w×h bytes, and to far more preprocessed (a decompression bomb).
func ZeroPNG(w, h int) []byte {
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(kind string, data []byte) {
		binary.Write(&out, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(kind))
		c.Write(data)
		out.WriteString(kind)
		out.Write(data)
		binary.Write(&out, binary.BigEndian, c.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 0 // 8 bits, grey
	chunk("IHDR", ihdr)
	var idat bytes.Buffer
	z, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, 1+w) // filter byte 0, then the row's pixels
	for range h {
		z.Write(row)
	}
	z.Close()
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}
