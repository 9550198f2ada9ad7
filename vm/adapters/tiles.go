package adapters

import (
	"fmt"
	"math"

	"github.com/genaic/genaic/preprocess"
)

// seqOf is what tile and patchify make of an image: a sequence of units
// (tiles or patches) and the grid they came from.
type seqOf struct {
	kind  preprocess.Seq
	units int
	grid  [2]int // rows and columns of tiles or patches (the thumbnail aside)
}

// tileImage cuts an image into the tiles of the grid t chooses for it, as
// LLaVA-NeXT's anyres does: the image is resized, its aspect kept, to fit
// the grid's canvas (the side that binds filled, the other
// ceil(side·scale), at most the canvas), pasted at the canvas's centre on
// zeros, and cut row by row; the thumbnail (the image resized to one
// tile) comes first or last where asked. The tiles are stacked top to
// bottom: c × (tiles·size) × size.
func tileImage(p *planar, t preprocess.Tile, f filter) *planar {
	rows, cols := t.Grid(p.h, p.w)
	ch, cw := rows*t.Size, cols*t.Size
	sw, sh := float64(cw)/float64(p.w), float64(ch)/float64(p.h)
	nh, nw := ch, cw
	if sw < sh {
		nh = min(int(math.Ceil(float64(p.h)*sw)), ch)
	} else {
		nw = min(int(math.Ceil(float64(p.w)*sh)), cw)
	}
	fit := resize(p, nh, nw, f).floats()
	top, left := (ch-nh)/2, (cw-nw)/2
	n := rows * cols
	first := 0
	if t.Thumbnail != "none" {
		n++
		if t.Thumbnail == "first" {
			first = 1
		}
	}
	size := t.Size
	out := newPlanar(p.c, n*size, size)
	out.seq = &seqOf{kind: preprocess.SeqTiles, units: n, grid: [2]int{rows, cols}}
	for k := range p.c {
		src := fit.pix[k*nh*nw : (k+1)*nh*nw]
		dst := out.pix[k*n*size*size : (k+1)*n*size*size]
		for y := range nh {
			cy := top + y // the canvas row
			r, ty := cy/size, cy%size
			for x := range nw {
				cx := left + x
				c, tx := cx/size, cx%size
				tile := first + r*cols + c
				dst[(tile*size+ty)*size+tx] = src[y*nw+x]
			}
		}
	}
	if t.Thumbnail != "none" {
		thumb := resize(p, size, size, f).floats()
		at := 0
		if t.Thumbnail == "last" {
			at = n - 1
		}
		for k := range p.c {
			copy(out.pix[(k*n+at)*size*size:(k*n+at+1)*size*size], thumb.pix[k*size*size:(k+1)*size*size])
		}
	}
	return out
}

// patchify cuts an image of c×h×w, h and w multiples of size, into its
// size×size patches in row-major order, each flattened channel-major
// (c, y, x) as a convolution of stride size reads it: patch (i, j) of the
// grid is row i·(w/size) + j of a units × (c·size·size) planar of one
// channel.
func patchify(p *planar, size int) *planar {
	p = p.floats()
	gh, gw := p.h/size, p.w/size
	feat := p.c * size * size
	out := newPlanar(1, gh*gw, feat)
	out.seq = &seqOf{kind: preprocess.SeqPatches, units: gh * gw, grid: [2]int{gh, gw}}
	for i := range gh {
		for j := range gw {
			row := out.pix[(i*gw+j)*feat : (i*gw+j+1)*feat]
			at := 0
			for k := range p.c {
				for y := range size {
					src := (k*p.h+i*size+y)*p.w + j*size
					copy(row[at:at+size], p.pix[src:src+size])
					at += size
				}
			}
		}
	}
	return out
}

// patchRefusal says why an image cannot be patchified, or nil.
func patchRefusal(h, w, size, index int) error {
	if h%size != 0 || w%size != 0 {
		return fmt.Errorf("is %d×%d pixels (height×width) at transform %d (patchify), not a multiple of patch_size %d; resize it to multiples of %d first (resize with height and width)", h, w, index, size, size)
	}
	return nil
}
