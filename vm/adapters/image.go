package adapters

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	_ "image/gif"  // decode registers GIF
	_ "image/jpeg" // decode registers JPEG
	_ "image/png"  // decode registers PNG
	"math"

	_ "golang.org/x/image/webp" // decode registers WebP
)

// planar is an image as float32 planes, channel-major:
// pix[(k*h+y)*w+x] is channel k of the pixel at row y, column x.
type planar struct {
	c, h, w int
	// pix holds the values, channel by channel, row by row; pix8 holds
	// them instead (pix nil) where the planar is an 8-bit image, every
	// value an integer in [0, 255]: decoded, then converted, cropped,
	// padded with such a value or resized, each as PIL does it to an
	// 8-bit image (resize8). An 8-bit image takes a quarter of the memory
	// a float one does, and resizing it reads its bytes as they are.
	pix  []float32
	pix8 []uint8
	seq  *seqOf // after tile or patchify: what the rows hold
}

func newPlanar(c, h, w int) *planar {
	return &planar{c: c, h: h, w: w, pix: make([]float32, c*h*w)}
}

// newPlanar8 is an 8-bit image of c×h×w, zeros.
func newPlanar8(c, h, w int) *planar {
	return &planar{c: c, h: h, w: w, pix8: make([]uint8, c*h*w)}
}

// is8 reports whether p is an 8-bit image (pix8 holds its values).
func (p *planar) is8() bool { return p.pix8 != nil }

// floats is p with its values as float32: p itself, or an 8-bit image's
// values copied (p stays as it is: another transform may read it).
func (p *planar) floats() *planar {
	if !p.is8() {
		return p
	}
	out := &planar{c: p.c, h: p.h, w: p.w, pix: make([]float32, len(p.pix8)), seq: p.seq}
	for i, v := range p.pix8 {
		out.pix[i] = float32(v)
	}
	return out
}

func (p *planar) dims() string {
	return fmt.Sprintf("%d×%d×%d (channels×height×width)", p.c, p.h, p.w)
}

// sniff describes the first bytes of an encoding, for messages.
func sniff(data []byte) string {
	n := min(len(data), 8)
	parts := make([]string, n)
	for i := range n {
		parts[i] = fmt.Sprintf("%02x", data[i])
	}
	return fmt.Sprintf("%d bytes starting %s", len(data), bytesText(parts))
}

func bytesText(parts []string) string {
	if len(parts) == 0 {
		return "with nothing"
	}
	out := "0x"
	for i, p := range parts {
		if i > 0 {
			out += " "
		}
		out += p
	}
	return out
}

// decodeHeader reads an encoded image's header: its format and size,
// checked as decodeImage checks them before it decodes any pixel.
func decodeHeader(data []byte, want string, maxPixels int64) (image.Config, string, error) {
	if len(data) == 0 {
		return image.Config{}, "", fmt.Errorf("is empty (0 bytes); an image is a PNG, JPEG, GIF or WebP encoding")
	}
	cfg, format, err := guarded(func() (image.Config, string, error) { return image.DecodeConfig(bytes.NewReader(data)) })
	if err != nil {
		return cfg, "", fmt.Errorf("is not a PNG, JPEG, GIF or WebP image (%v); read %s", err, sniff(data))
	}
	if want != "" && format != want {
		return cfg, "", fmt.Errorf("is a %s image, but the decode transform asks for format %s", format, want)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return cfg, "", fmt.Errorf("is a %s image of %d×%d pixels; an image has at least one pixel", format, cfg.Width, cfg.Height)
	}
	if int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return cfg, "", fmt.Errorf("is a %s image of %d×%d pixels, more than the %d pixels this adapter decodes", format, cfg.Width, cfg.Height, maxPixels)
	}
	return cfg, format, nil
}

// decodeImage decodes one encoded image to 3-channel RGB planes in
// [0, 255]. want is the format decode demands ("" for any).
func decodeImage(data []byte, want string, maxPixels int64) (*planar, error) {
	cfg, format, err := decodeHeader(data, want, maxPixels)
	if err != nil {
		return nil, err
	}
	img, _, err := guarded(func() (image.Image, string, error) { return image.Decode(bytes.NewReader(data)) })
	if err != nil {
		return nil, fmt.Errorf("is a corrupt %s image of %d×%d pixels (%v); read %s", format, cfg.Width, cfg.Height, err, sniff(data))
	}
	var p *planar
	switch src, _ := img.(*image.YCbCr); {
	case format == "gif":
		if frame, ok := img.(*image.Paletted); ok && frame.Rect != image.Rect(0, 0, cfg.Width, cfg.Height) {
			img = gifCanvas(frame, cfg.Width, cfg.Height)
		}
	case format == "webp":
		if src := lossyWebP(img); src != nil {
			p = webpToRGB(src)
		}
	case format == "jpeg" && src != nil:
		p = jpegToRGB(src)
	}
	if p == nil {
		p = toRGB(img)
	}
	return p, nil
}

// gifCanvas lays a GIF's first frame, which may cover less than the
// image's logical screen, on a w×h canvas, as PIL reads the first frame:
// the image is its header's size (what admission keyed it by), and the
// pixels the frame leaves hold its transparent colour where the palette
// has one (black: the decoder keeps no other), else the palette's first.
func gifCanvas(frame *image.Paletted, w, h int) *image.Paletted {
	canvas := image.NewPaletted(image.Rect(0, 0, w, h), frame.Palette)
	fill := uint8(0)
	for i, c := range frame.Palette {
		if _, _, _, a := c.RGBA(); a == 0 {
			fill = uint8(i)
			break
		}
	}
	for i := range canvas.Pix {
		canvas.Pix[i] = fill
	}
	r := frame.Rect.Intersect(canvas.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		copy(canvas.Pix[canvas.PixOffset(r.Min.X, y):][:r.Dx()], frame.Pix[frame.PixOffset(r.Min.X, y):][:r.Dx()])
	}
	return canvas
}

// jpegToRGB converts a JPEG's planes to RGB as libjpeg decodes them, and
// so as PIL reads a JPEG, rather than with each pixel's nearest chroma
// sample: chroma subsampled across (4:2:2) or both ways (4:2:0) is
// upsampled with libjpeg's "fancy" triangle filter where the subsampled
// plane is wider than 2 samples, its box filter otherwise, and Y′CbCr is
// converted with libjpeg's fixed-point tables. nil for another
// subsampling (4:4:0, 4:1:1), which toRGB converts.
func jpegToRGB(src *image.YCbCr) *planar {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	var hv [2]int // chroma subsampling across and down
	switch src.SubsampleRatio {
	case image.YCbCrSubsampleRatio444:
		hv = [2]int{1, 1}
	case image.YCbCrSubsampleRatio422:
		hv = [2]int{2, 1}
	case image.YCbCrSubsampleRatio420:
		hv = [2]int{2, 2}
	default:
		return nil
	}
	if src.Rect.Min != (image.Point{}) {
		return nil
	}
	cw, ch := (w+hv[0]-1)/hv[0], (h+hv[1]-1)/hv[1]
	fancy := cw > 2
	p := newPlanar8(3, h, w)
	plane := h * w
	r, g, b := p.pix8[:plane], p.pix8[plane:2*plane], p.pix8[2*plane:]
	// A row's chroma, upsampled, one column past the image for an odd
	// width's last pair.
	cb, cr := make([]uint8, 2*cw), make([]uint8, 2*cw)
	sums := make([]int32, cw) // a chroma row's column sums
	upsample := func(dst []uint8, plane []byte, y int) {
		row := func(i int) []byte { return plane[min(max(i, 0), ch-1)*src.CStride:][:cw] }
		i := y / hv[1]
		near := row(i)
		switch {
		case hv[0] == 1:
			copy(dst, near)
		case !fancy:
			for c, v := range near {
				dst[2*c], dst[2*c+1] = v, v
			}
		case hv[1] == 1: // 4:2:2: three parts of the nearest sample, one of the next
			dst[0], dst[2*cw-1] = near[0], near[cw-1]
			for c := 1; c < cw; c++ {
				a, b := 3*int32(near[c]), 3*int32(near[c-1])
				dst[2*c-1] = uint8((b + int32(near[c]) + 2) >> 2)
				dst[2*c] = uint8((a + int32(near[c-1]) + 1) >> 2)
			}
		default: // 4:2:0: the same across the column sums of three parts the nearest row, one the next
			far := row(i + 2*(y%2) - 1)
			for c, v := range near {
				sums[c] = 3*int32(v) + int32(far[c])
			}
			dst[0], dst[2*cw-1] = uint8((4*sums[0]+8)>>4), uint8((4*sums[cw-1]+7)>>4)
			for c := 1; c < cw; c++ {
				dst[2*c-1] = uint8((3*sums[c-1] + sums[c] + 7) >> 4)
				dst[2*c] = uint8((3*sums[c] + sums[c-1] + 8) >> 4)
			}
		}
	}
	for y := range h {
		upsample(cb, src.Cb, y)
		upsample(cr, src.Cr, y)
		cbs, crs := cb[:w], cr[:w]
		out := y * w
		rs, gs, bs := r[out:out+w], g[out:out+w], b[out:out+w]
		for x, l := range src.Y[y*src.YStride:][:w] {
			yy, u, v := int32(l), cbs[x], crs[x]
			rs[x] = clamp255(yy + jpegCrR[v])
			gs[x] = clamp255(yy + (jpegCbG[u]+jpegCrG[v])>>16)
			bs[x] = clamp255(yy + jpegCbB[u])
		}
	}
	return p
}

// jpegCrR, jpegCbB, jpegCrG and jpegCbG are libjpeg's Y′CbCr→RGB tables
// (jdcolor.c), by chroma sample: R = Y′ + crR, B = Y′ + cbB, G = Y′ +
// (cbG + crG) >> 16, in 16 fractional bits rounded half up.
var jpegCrR, jpegCbB, jpegCrG, jpegCbG = jpegTables()

func jpegTables() (crR, cbB, crG, cbG [256]int32) {
	fix := func(x float64) int32 { return int32(x*(1<<16) + 0.5) }
	for i := range 256 {
		x := int32(i) - 128
		crR[i] = (fix(1.40200)*x + 1<<15) >> 16
		cbB[i] = (fix(1.77200)*x + 1<<15) >> 16
		crG[i] = -fix(0.71414) * x
		cbG[i] = -fix(0.34414)*x + 1<<15
	}
	return crR, cbB, crG, cbG
}

func clamp255(v int32) uint8 { return uint8(min(max(v, 0), 255)) }

// guarded runs a decoder on a client's bytes, a panic of the decoder's
// (bytes crafted against it) turned into the image's error: a request's
// bad image fails that request, never the process.
func guarded[T any](decode func() (T, string, error)) (v T, format string, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, format, err = zero, "", fmt.Errorf("made the decoder fail (%v)", r)
		}
	}()
	return decode()
}

// lossyWebP is the Y′CbCr planes of a lossy WebP as golang.org/x/image/webp
// decodes it (with its alpha plane beside them, which RGB drops), nil for
// any other image: a lossless WebP is RGBA already.
func lossyWebP(img image.Image) *image.YCbCr {
	var src *image.YCbCr
	switch v := img.(type) {
	case *image.YCbCr:
		src = v
	case *image.NYCbCrA:
		src = &v.YCbCr
	}
	if src == nil || src.SubsampleRatio != image.YCbCrSubsampleRatio420 || src.Rect.Min != (image.Point{}) {
		return nil
	}
	return src
}

// webpToRGB converts a lossy WebP's planes to RGB as libwebp decodes
// them, so as PIL reads a WebP, rather than as JPEG's full-range Y′CbCr:
// VP8 keeps BT.601's studio range, Y′ in [16, 235]. Each pixel's chroma
// is interpolated from the four chroma samples nearest it, weighted 9, 3,
// 3 and 1 (libwebp's "fancy" upsampling: the nearest, its neighbours
// across the pixel's column and row, and the diagonal one, each clamped
// to the plane), then converted in libwebp's fixed point (14 fractional
// bits, then 6).
func webpToRGB(src *image.YCbCr) *planar {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	cw, ch := (w+1)/2, (h+1)/2
	p := newPlanar8(3, h, w)
	plane := h * w
	r, g, b := p.pix8[:plane], p.pix8[plane:2*plane], p.pix8[2*plane:]
	// The chroma columns of each pixel column: its nearest sample's, and
	// the neighbour's on the pixel's side of it.
	near, far := make([]int, w), make([]int, w)
	for x := range w {
		near[x], far[x] = x/2, min(max(x/2+2*(x%2)-1, 0), cw-1)
	}
	cb, cr := make([]int32, w), make([]int32, w) // a row's interpolated chroma
	upsample := func(dst []int32, plane []byte, nearRow, farRow int) {
		n, f := plane[nearRow*src.CStride:][:cw], plane[farRow*src.CStride:][:cw]
		for x := range dst {
			dst[x] = (9*int32(n[near[x]]) + 3*int32(n[far[x]]) + 3*int32(f[near[x]]) + int32(f[far[x]]) + 8) >> 4
		}
	}
	for y := range h {
		nearRow, farRow := y/2, min(max(y/2+2*(y%2)-1, 0), ch-1)
		upsample(cb, src.Cb, nearRow, farRow)
		upsample(cr, src.Cr, nearRow, farRow)
		row := src.Y[y*src.YStride:][:w]
		for x, yy := range row {
			l := mulHi(int32(yy), 19077)
			i := y*w + x
			r[i] = clip8(l + mulHi(cr[x], 26149) - 14234)
			g[i] = clip8(l - mulHi(cb[x], 6419) - mulHi(cr[x], 13320) + 8708)
			b[i] = clip8(l + mulHi(cb[x], 33050) - 17685)
		}
	}
	return p
}

// mulHi and clip8 are libwebp's fixed-point steps: a product's high bits
// past 8, and a value of 6 fractional bits clamped to [0, 255].
func mulHi(v, coeff int32) int32 { return (v * coeff) >> 8 }

func clip8(v int32) uint8 { return uint8(min(max(v>>6, 0), 255)) }

// toRGB converts a decoded image to RGB planes, dropping alpha without
// compositing and replicating grey.
func toRGB(img image.Image) *planar {
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	p := newPlanar8(3, h, w)
	plane := h * w
	r, g, bl := p.pix8[:plane], p.pix8[plane:2*plane], p.pix8[2*plane:]
	set := func(i int, cr, cg, cb uint8) { r[i], g[i], bl[i] = cr, cg, cb }
	switch src := img.(type) {
	case *image.YCbCr:
		// The chroma column of each x, and the rows' offsets, worked out
		// once rather than per pixel (YOffset, COffset).
		cols := make([]int, w)
		for x := range cols {
			cols[x] = src.COffset(b.Min.X+x, b.Min.Y) - src.COffset(b.Min.X, b.Min.Y)
		}
		for y := range h {
			ys := src.Y[src.YOffset(b.Min.X, b.Min.Y+y):][:w]
			c0 := src.COffset(b.Min.X, b.Min.Y+y)
			cbs, crs := src.Cb[c0:], src.Cr[c0:]
			out := y * w
			for x, yy := range ys {
				cr, cg, cb := color.YCbCrToRGB(yy, cbs[cols[x]], crs[cols[x]])
				r[out+x], g[out+x], bl[out+x] = cr, cg, cb
			}
		}
	case *image.NRGBA:
		for y := range h {
			row := src.Pix[y*src.Stride:]
			for x := range w {
				set(y*w+x, row[4*x], row[4*x+1], row[4*x+2])
			}
		}
	case *image.RGBA: // an opaque PNG's, premultiplied
		for y := range h {
			row := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):][:4*w]
			for x := range w {
				px := row[4*x:][:4]
				if px[3] == 0xff {
					set(y*w+x, px[0], px[1], px[2])
					continue
				}
				c := color.NRGBAModel.Convert(color.RGBA{R: px[0], G: px[1], B: px[2], A: px[3]}).(color.NRGBA)
				set(y*w+x, c.R, c.G, c.B)
			}
		}
	case *image.Gray:
		for y := range h {
			row := src.Pix[y*src.Stride:]
			for x := range w {
				set(y*w+x, row[x], row[x], row[x])
			}
		}
	case *image.Paletted:
		pal := make([]color.NRGBA, len(src.Palette))
		for i, c := range src.Palette {
			pal[i] = color.NRGBAModel.Convert(c).(color.NRGBA)
		}
		for y := range h {
			row := src.Pix[y*src.Stride:]
			for x := range w {
				var c color.NRGBA
				if int(row[x]) < len(pal) {
					c = pal[row[x]]
				}
				set(y*w+x, c.R, c.G, c.B)
			}
		}
	default:
		for y := range h {
			for x := range w {
				c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
				set(y*w+x, c.R, c.G, c.B)
			}
		}
	}
	return p
}

// convertColor changes the channel layout of an RGB image: RGB (kept), BGR
// (reversed) or L (luma).
func convertColor(p *planar, mode string) *planar {
	plane := p.h * p.w
	switch mode {
	case "BGR":
		out := p.like(p.c, p.h, p.w)
		for k := range p.c {
			out.copyPlane(k, p, p.c-1-k)
		}
		return out
	case "L":
		if p.c == 1 {
			return p
		}
		out := p.like(1, p.h, p.w)
		if p.is8() { // PIL's 8-bit luma: 16 fraction bits, rounded half up
			r, g, b := p.pix8[:plane], p.pix8[plane:2*plane], p.pix8[2*plane:3*plane]
			for i := range out.pix8 {
				out.pix8[i] = uint8((19595*int32(r[i]) + 38470*int32(g[i]) + 7471*int32(b[i]) + 1<<15) >> 16)
			}
			return out
		}
		r, g, b := p.pix[:plane], p.pix[plane:2*plane], p.pix[2*plane:3*plane]
		for i := range out.pix {
			out.pix[i] = float32(0.299*float64(r[i]) + 0.587*float64(g[i]) + 0.114*float64(b[i]))
		}
		return out
	}
	if p.c == 1 { // RGB from one channel: replicate
		out := p.like(3, p.h, p.w)
		for k := range 3 {
			out.copyPlane(k, p, 0)
		}
		return out
	}
	return p
}

// like is a planar of c×h×w zeros held as p's values are: 8-bit or float.
func (p *planar) like(c, h, w int) *planar {
	if p.is8() {
		return newPlanar8(c, h, w)
	}
	return newPlanar(c, h, w)
}

// copyPlane copies channel k of src, held as p is, into p's channel to.
func (p *planar) copyPlane(to int, src *planar, k int) {
	n := p.h * p.w
	if p.is8() {
		copy(p.pix8[to*n:(to+1)*n], src.pix8[k*n:(k+1)*n])
		return
	}
	copy(p.pix[to*n:(to+1)*n], src.pix[k*n:(k+1)*n])
}

// filter is a resampling kernel: its support radius and its weight at a
// distance in source pixels (at scale 1).
type filter struct {
	support float64
	weight  func(x float64) float64
}

var filters = map[string]filter{
	"bilinear": {support: 1, weight: func(x float64) float64 {
		x = math.Abs(x)
		if x < 1 {
			return 1 - x
		}
		return 0
	}},
	"bicubic": {support: 2, weight: func(x float64) float64 {
		const a = -0.5 // PIL's and Keys' choice
		x = math.Abs(x)
		switch {
		case x < 1:
			return ((a+2)*x-(a+3))*x*x + 1
		case x < 2:
			return ((a*x-5*a)*x+8*a)*x - 4*a
		}
		return 0
	}},
	"nearest": {},
}

// taps are the source positions and weights of each output position along
// one axis.
type taps struct {
	start []int
	w     [][]float32
	w64   [][]float64 // the same weights before they are narrowed
}

// makeTaps computes the weights that resample an axis of n positions to
// out positions: half-pixel centres, the kernel widened by the scale when
// shrinking, weights normalized to sum to one.
func makeTaps(n, out int, f filter) taps {
	t := taps{start: make([]int, out), w: make([][]float32, out), w64: make([][]float64, out)}
	scale := float64(n) / float64(out)
	if f.weight == nil { // nearest
		for i := range out {
			t.start[i] = min(int((float64(i)+0.5)*scale), n-1)
			t.w[i], t.w64[i] = []float32{1}, []float64{1}
		}
		return t
	}
	widen := max(scale, 1)
	support := f.support * widen
	for i := range out {
		centre := (float64(i) + 0.5) * scale
		lo := max(int(math.Floor(centre-support+0.5)), 0)
		hi := min(int(math.Floor(centre+support+0.5)), n)
		if hi <= lo { // never with these kernels; kept so that no window is empty
			lo = min(max(int(centre), 0), n-1)
			hi = lo + 1
		}
		ws := make([]float64, hi-lo)
		sum := 0.0
		for j := lo; j < hi; j++ {
			ws[j-lo] = f.weight((float64(j) + 0.5 - centre) / widen)
			sum += ws[j-lo]
		}
		t.start[i] = lo
		t.w[i] = make([]float32, hi-lo)
		for j := range ws {
			if sum != 0 {
				ws[j] /= sum
			} else {
				ws[j] = float64(1 - min(j, 1))
			}
			t.w[i][j] = float32(ws[j])
		}
		t.w64[i] = ws
	}
	return t
}

// resize resamples p to oh×ow, separably: rows first, then columns; an
// 8-bit image as PIL resizes one (resize8).
func resize(p *planar, oh, ow int, f filter) *planar {
	if oh == p.h && ow == p.w {
		return p
	}
	if p.is8() {
		return resize8(p, oh, ow, f, image.Rect(0, 0, ow, oh))
	}
	horiz := makeTaps(p.w, ow, f)
	mid := newPlanar(p.c, p.h, ow)
	for k := range p.c {
		for y := range p.h {
			src := p.pix[(k*p.h+y)*p.w:]
			dst := mid.pix[(k*p.h+y)*ow:]
			for x, taps := range horiz.w {
				window := src[horiz.start[x]:][:len(taps)]
				acc := float32(0)
				for j, wt := range taps {
					acc += wt * window[j]
				}
				dst[x] = acc
			}
		}
	}
	vert := makeTaps(p.h, oh, f)
	out := newPlanar(p.c, oh, ow)
	for k := range p.c {
		plane := mid.pix[k*p.h*ow:]
		dst := out.pix[k*oh*ow:]
		for y := range oh {
			row := dst[y*ow : (y+1)*ow]
			for j, wt := range vert.w[y] {
				src := plane[(vert.start[y]+j)*ow:][:len(row)]
				for x, v := range src {
					row[x] += wt * v
				}
			}
		}
	}
	return out
}

// precisionBits are the fraction bits of PIL's 8-bit resampling weights:
// 255 times their sum, a little over one, fits an int32 with them.
const precisionBits = 32 - 8 - 2

// resizeForCrop resizes p to oh×ow for a center_crop to ch×cw: where p
// is an 8-bit image and the crop lies within the resized image, it makes
// only the crop's window (resize8), else the whole image; the crop then
// cuts (or finds at its size) the same values either way.
func resizeForCrop(p *planar, oh, ow, ch, cw int, f filter) *planar {
	if !p.is8() || ch > oh || cw > ow || (oh == p.h && ow == p.w) {
		return resize(p, oh, ow, f)
	}
	top, left := (oh-ch)/2, (ow-cw)/2 // where centerCrop cuts
	return resize8(p, oh, ow, f, image.Rect(left, top, left+cw, top+ch))
}

// resize8 resamples an 8-bit image to oh×ow as PIL resizes one, and
// returns the window win of the result (all of it, or the part a
// center_crop keeps): a pass across where the width changes, then one
// down where the height does, each weight in precisionBits fraction bits
// (rounded half away from zero), each sum rounded half up and clamped to
// [0, 255], so that the second pass reads 8-bit values, as PIL's reads
// its first's image. Each pass makes only what the window needs: its
// columns, and across, the rows its rows read.
func resize8(p *planar, oh, ow int, f filter, win image.Rectangle) *planar {
	ch, cw := win.Dy(), win.Dx()
	r0, r1 := win.Min.Y, win.Max.Y // the rows of p the window reads
	var start []int
	var kv [][]int32
	if oh != p.h {
		start, kv = weights8(p.h, oh, f)
		start, kv = start[win.Min.Y:win.Max.Y], kv[win.Min.Y:win.Max.Y]
		r0, r1 = start[0], 0
		for o, ws := range kv {
			r1 = max(r1, start[o]+len(ws))
		}
	}
	rows := r1 - r0
	var mid []uint8 // the pass across, the window's columns of rows r0 to r1
	switch {
	case ow == p.w && cw == p.w && rows == p.h:
		mid = p.pix8 // read as it is
	case ow != p.w:
		mid = make([]uint8, p.c*rows*cw)
		hs, kh := weights8(p.w, ow, f)
		hs, kh = hs[win.Min.X:win.Max.X], kh[win.Min.X:win.Max.X]
		for k := range p.c {
			across8(p.pix8[(k*p.h+r0)*p.w:][:rows*p.w], p.w, hs, kh, mid[k*rows*cw:][:rows*cw])
		}
	default:
		mid = make([]uint8, p.c*rows*cw)
		for k := range p.c {
			for y := range rows {
				copy(mid[(k*rows+y)*cw:][:cw], p.pix8[(k*p.h+r0+y)*p.w+win.Min.X:][:cw])
			}
		}
	}
	if oh == p.h {
		return &planar{c: p.c, h: ch, w: cw, pix8: mid}
	}
	out := newPlanar8(p.c, ch, cw)
	acc := make([]int32, cw) // an output row's sums
	for k := range p.c {
		plane := mid[k*rows*cw:][:rows*cw]
		to := out.pix8[k*ch*cw:][:ch*cw]
		for o, ws := range kv {
			// Rows at a time, each weight applied to a whole row: the
			// loops run over one length, without bounds checks.
			at := start[o] - r0
			for x, v := range plane[at*cw:][:len(acc)] {
				acc[x] = 1<<(precisionBits-1) + int32(v)*ws[0]
			}
			for j, wt := range ws[1:] {
				for x, v := range plane[(at+1+j)*cw:][:len(acc)] {
					acc[x] += int32(v) * wt
				}
			}
			dst := to[o*cw:][:len(acc)]
			for x, sum := range acc {
				dst[x] = resampled8(sum)
			}
		}
	}
	return out
}

// across8 is resize8's pass across: rows of w 8-bit values, each
// resampled to the outputs whose windows start and kh give, into mid.
// Four rows go through each output's window together, sharing its
// weights and the loop's own work, which is most of a window's cost
// when it holds a few taps.
func across8(pix []uint8, w int, start []int, kh [][]int32, mid []uint8) {
	const half = 1 << (precisionBits - 1)
	ow := len(kh)
	rows := len(pix) / w
	y := 0
	for ; y+4 <= rows; y += 4 {
		r0, r1, r2, r3 := pix[y*w:][:w], pix[(y+1)*w:][:w], pix[(y+2)*w:][:w], pix[(y+3)*w:][:w]
		t0, t1, t2, t3 := mid[y*ow:][:ow], mid[(y+1)*ow:][:ow], mid[(y+2)*ow:][:ow], mid[(y+3)*ow:][:ow]
		for o, ws := range kh {
			s := start[o]
			v0, v1, v2, v3 := r0[s:][:len(ws)], r1[s:][:len(ws)], r2[s:][:len(ws)], r3[s:][:len(ws)]
			s0, s1, s2, s3 := int32(half), int32(half), int32(half), int32(half)
			for j, k := range ws {
				s0 += int32(v0[j]) * k
				s1 += int32(v1[j]) * k
				s2 += int32(v2[j]) * k
				s3 += int32(v3[j]) * k
			}
			t0[o], t1[o], t2[o], t3[o] = resampled8(s0), resampled8(s1), resampled8(s2), resampled8(s3)
		}
	}
	for ; y < rows; y++ { // the last rows, one at a time
		row, to := pix[y*w:][:w], mid[y*ow:][:ow]
		for o, ws := range kh {
			window := row[start[o]:][:len(ws)]
			sum := int32(half)
			for j, k := range ws {
				sum += int32(window[j]) * k
			}
			to[o] = resampled8(sum)
		}
	}
}

// weights8 are the windows that resample an axis of n positions to out,
// as PIL's 8-bit resampling weighs them: each window's first position,
// and its weights in precisionBits fraction bits, rounded half away from
// zero as PIL's casts round them.
func weights8(n, out int, f filter) ([]int, [][]int32) {
	t := makeTaps(n, out, f)
	kk := make([][]int32, out)
	for i, ws := range t.w64 {
		kk[i] = make([]int32, len(ws))
		for j, w := range ws {
			kk[i][j] = int32(math.Round(w * (1 << precisionBits)))
		}
	}
	return t.start, kk
}

// resampled8 is a resampled 8-bit value: its sum of weighted values, rounded
// down in precisionBits (the half was added first) and clamped to
// [0, 255].
func resampled8(sum int32) uint8 {
	v := sum >> precisionBits
	if uint32(v) > 255 { // rare: only a kernel's negative lobes leave the range
		v = ^(v >> 31) & 255 // 0 below, 255 above
	}
	return uint8(v)
}

// centerCrop cuts the centred ch×cw window of p, zero-padding where the
// window reaches beyond the image.
func centerCrop(p *planar, ch, cw int) *planar {
	if ch == p.h && cw == p.w {
		return p
	}
	top, left := (p.h-ch)/2, (p.w-cw)/2
	out := p.like(p.c, ch, cw)
	for k := range p.c {
		for y := range ch {
			sy := y + top
			if sy < 0 || sy >= p.h {
				continue
			}
			x0, x1 := max(0, -left), min(cw, p.w-left)
			if x1 > x0 {
				out.copyRow(k, y, x0, p, sy, x0+left, x1-x0)
			}
		}
	}
	return out
}

// copyRow copies n values of src's row y (of channel k) from column x
// into p's row to (of channel k) from column at; p and src are held
// alike (8-bit or float).
func (p *planar) copyRow(k, to, at int, src *planar, y, x, n int) {
	d, s := (k*p.h+to)*p.w+at, (k*src.h+y)*src.w+x
	if p.is8() {
		copy(p.pix8[d:d+n], src.pix8[s:s+n])
		return
	}
	copy(p.pix[d:d+n], src.pix[s:s+n])
}

// padImage places p at the top left of an h×w image of value; p is at
// most h×w (padRefusal).
func padImage(p *planar, h, w int, value float32) *planar {
	if h == p.h && w == p.w {
		return p
	}
	var out *planar
	if p.is8() && value >= 0 && value <= 255 && value == float32(math.Trunc(float64(value))) {
		out = newPlanar8(p.c, h, w)
		for i := range out.pix8 {
			out.pix8[i] = uint8(value)
		}
	} else {
		p = p.floats()
		out = newPlanar(p.c, h, w)
		for i := range out.pix {
			out.pix[i] = value
		}
	}
	for k := range p.c {
		for y := range p.h {
			out.copyRow(k, y, 0, p, y, 0, p.w)
		}
	}
	return out
}

// padRefusal says why the pad of transform index, to ph×pw, cannot take
// an image of h×w: it is larger on a side. Check refuses what the program
// fixes; this is an image whose size only its header tells.
func padRefusal(h, w, ph, pw, index int) error {
	if h > ph || w > pw {
		return fmt.Errorf("is %d×%d pixels (height×width) at transform %d (pad), larger than the %d×%d it pads to; pad only adds pixels, so bound the image first (resize with height and max_width, or width and max_height)", h, w, index, ph, pw)
	}
	return nil
}

// rescale multiplies every value by factor.
func rescale(p *planar, factor float32) *planar {
	out := newPlanar(p.c, p.h, p.w)
	if p.is8() {
		for i, v := range p.pix8 {
			out.pix[i] = float32(v) * factor
		}
		return out
	}
	for i, v := range p.pix {
		out.pix[i] = v * factor
	}
	return out
}

// normalize subtracts each channel's mean and divides by its std.
func normalize(p *planar, mean, std []float64) *planar {
	out := newPlanar(p.c, p.h, p.w)
	plane := p.h * p.w
	var table [256]float32 // an 8-bit channel's values, normalized
	for k := range p.c {
		m, s := mean[min(k, len(mean)-1)], std[min(k, len(std)-1)]
		to := out.pix[k*plane : (k+1)*plane]
		if p.is8() {
			for v := range table {
				table[v] = float32((float64(v) - m) / s)
			}
			for i, v := range p.pix8[k*plane : (k+1)*plane] {
				to[i] = table[v]
			}
			continue
		}
		for i, v := range p.pix[k*plane : (k+1)*plane] {
			to[i] = float32((float64(v) - m) / s)
		}
	}
	return out
}
