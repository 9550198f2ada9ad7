package adapters

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// powerSpectrum computes the power |X_k|² of the n/2+1 coefficients of a
// frame of n real samples. It holds buffers a frame is transformed in:
// one frame at a time.
type powerSpectrum interface {
	power(spec, frame []float64)
}

// newPowerSpectrum is the transform of frames of n samples: realFFT where
// n is even and n/2 has no prime factor above 5 (the n_fft of front ends:
// openWakeWord's 512, Whisper's 400), else gonum's FFT.
func newPowerSpectrum(n int) powerSpectrum {
	if f := newRealFFT(n); f != nil {
		return f
	}
	return &anyFFT{fft: fourier.NewFFT(n), coef: make([]complex128, n/2+1)}
}

// anyFFT is gonum's FFT, of any length.
type anyFFT struct {
	fft  *fourier.FFT
	coef []complex128
}

func (f *anyFFT) power(spec, frame []float64) {
	f.coef = f.fft.Coefficients(f.coef, frame)
	for k, c := range f.coef {
		spec[k] = real(c)*real(c) + imag(c)*imag(c)
	}
}

// realFFT transforms n real samples as one complex FFT of half = n/2
// points (the even samples as real parts, the odd as imaginary ones) and
// a split of its result into the coefficients of the real frame: half the
// work of a complex FFT of n. The complex FFT is Stockham's, decimated in
// frequency, radix 4, 2, 3 and 5 in turn: a stage of radix p on
// sequences of size m·p, s of them interleaved, makes p·s sequences of
// size m, in the other buffer, in order: no reordering pass.
type realFFT struct {
	half int
	// factors are the radices, first stage first, and sizes the
	// sequences' size each stage takes (sizes[0] = half).
	factors, sizes []int
	// twiddles[d] are stage d's, exp(-2πi·j·k/sizes[d]) for j < m and
	// 1 ≤ k < p, at j·(p-1) + k-1: a butterfly reads its p-1 in a row.
	twiddles [][]complex128
	// split are exp(-2πi·k/n) for k < half, the split's.
	split []complex128
	x, y  []complex128
}

// newRealFFT plans the transform of n samples; nil where n is odd or n/2
// has a prime factor above 5.
func newRealFFT(n int) *realFFT {
	if n < 2 || n%2 != 0 {
		return nil
	}
	half := n / 2
	f := &realFFT{half: half, split: make([]complex128, half), x: make([]complex128, half), y: make([]complex128, half)}
	m := half
	for _, p := range []int{4, 2, 3, 5} {
		for m%p == 0 && m > 1 {
			f.factors = append(f.factors, p)
			m /= p
		}
	}
	if m != 1 {
		return nil
	}
	size := half
	for _, p := range f.factors {
		f.sizes = append(f.sizes, size)
		m := size / p
		tw := make([]complex128, 0, m*(p-1))
		for j := range m {
			for k := 1; k < p; k++ {
				// Each from its own angle, not by recurrence, whose
				// errors would grow along the table.
				s, c := math.Sincos(-2 * math.Pi * float64(j*k) / float64(size))
				tw = append(tw, complex(c, s))
			}
		}
		f.twiddles = append(f.twiddles, tw)
		size = m
	}
	for k := range f.split {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		f.split[k] = complex(c, s)
	}
	return f
}

func (f *realFFT) power(spec, frame []float64) {
	half := f.half
	frame = frame[:2*half]
	for i := range f.x {
		f.x[i] = complex(frame[2*i], frame[2*i+1])
	}
	z := f.transform()
	// Z = FFT(even + i·odd): the even samples' transform is
	// (Z_k + conj Z_{half-k})/2, the odd's (Z_k - conj Z_{half-k})/2i, and
	// X_k = E_k + exp(-2πi·k/n)·O_k.
	spec = spec[:half+1]
	z0 := z[0]
	spec[0] = sq(real(z0) + imag(z0))
	spec[half] = sq(real(z0) - imag(z0))
	for k := 1; k < half; k++ {
		a, b := z[k], z[half-k]
		b = complex(real(b), -imag(b))
		e := (a + b) * 0.5
		d := (a - b) * 0.5
		o := complex(imag(d), -real(d)) // d / i
		x := e + f.split[k]*o
		spec[k] = real(x)*real(x) + imag(x)*imag(x)
	}
}

func sq(v float64) float64 { return v * v }

// transform transforms x, returning the buffer that holds the result.
func (f *realFFT) transform() []complex128 {
	x, y := f.x, f.y
	s := 1
	for d, p := range f.factors {
		m := f.sizes[d] / p
		tw := f.twiddles[d]
		// Sequence element j+r·m of each interleaved sequence q gives,
		// by the p-point DFT, element p·j+k of sequence q, twiddled.
		if s == 1 && p == 4 {
			// The first stage: one sequence, read and written in a row.
			x0, x1, x2, x3 := x[:m], x[m:2*m], x[2*m:3*m], x[3*m:4*m]
			out, w := y[:4*m], tw[:3*m]
			for j, a0 := range x0 {
				a1, a2, a3 := x1[j], x2[j], x3[j]
				t0, t1 := a0+a2, a0-a2
				t2, t3 := a1+a3, minusI(a1-a3)
				out[4*j], out[4*j+1], out[4*j+2], out[4*j+3] = t0+t2, (t1+t3)*w[3*j], (t0-t2)*w[3*j+1], (t1-t3)*w[3*j+2]
			}
			x, y = y, x
			s *= p
			continue
		}
		for j := range m {
			w := tw[j*(p-1) : (j+1)*(p-1)]
			out := y[s*p*j : s*p*(j+1)]
			switch p {
			case 4:
				x0, x1, x2, x3 := x[s*j:][:s], x[s*(j+m):][:s], x[s*(j+2*m):][:s], x[s*(j+3*m):][:s]
				y0, y1, y2, y3 := out[:s], out[s:2*s], out[2*s:3*s], out[3*s:]
				w1, w2, w3 := w[0], w[1], w[2]
				for q, a0 := range x0 {
					a1, a2, a3 := x1[q], x2[q], x3[q]
					t0, t1 := a0+a2, a0-a2
					t2, t3 := a1+a3, minusI(a1-a3)
					y0[q], y1[q], y2[q], y3[q] = t0+t2, (t1+t3)*w1, (t0-t2)*w2, (t1-t3)*w3
				}
			case 2:
				x0, x1 := x[s*j:][:s], x[s*(j+m):][:s]
				y0, y1 := out[:s], out[s:]
				w1 := w[0]
				for q, a0 := range x0 {
					a1 := x1[q]
					y0[q], y1[q] = a0+a1, (a0-a1)*w1
				}
			case 3:
				x0, x1, x2 := x[s*j:][:s], x[s*(j+m):][:s], x[s*(j+2*m):][:s]
				y0, y1, y2 := out[:s], out[s:2*s], out[2*s:]
				w1, w2 := w[0], w[1]
				for q, a0 := range x0 {
					a1, a2 := x1[q], x2[q]
					t := a1 + a2
					u := a0 - scale(0.5, t)
					v := minusI(scale(sin3, a1-a2))
					y0[q], y1[q], y2[q] = a0+t, (u+v)*w1, (u-v)*w2
				}
			case 5:
				x0, x1, x2, x3, x4 := x[s*j:][:s], x[s*(j+m):][:s], x[s*(j+2*m):][:s], x[s*(j+3*m):][:s], x[s*(j+4*m):][:s]
				y0, y1, y2, y3, y4 := out[:s], out[s:2*s], out[2*s:3*s], out[3*s:4*s], out[4*s:]
				w1, w2, w3, w4 := w[0], w[1], w[2], w[3]
				for q, a0 := range x0 {
					a1, a2, a3, a4 := x1[q], x2[q], x3[q], x4[q]
					t1, t2 := a1+a4, a2+a3
					t3, t4 := a1-a4, a2-a3
					u1 := a0 + scale(cos5, t1) + scale(cos25, t2)
					u2 := a0 + scale(cos25, t1) + scale(cos5, t2)
					v1 := minusI(scale(sin5, t3) + scale(sin25, t4))
					v2 := minusI(scale(sin25, t3) - scale(sin5, t4))
					y0[q], y1[q], y2[q], y3[q], y4[q] = a0+t1+t2, (u1+v1)*w1, (u2+v2)*w2, (u2-v2)*w3, (u1-v1)*w4
				}
			}
		}
		x, y = y, x
		s *= p
	}
	return x
}

// The constants of the 3- and 5-point DFTs: sin(2π/3), and the cosines
// and sines of 2π/5 and 4π/5.
var (
	sin3       = math.Sqrt(3) / 2
	cos5, sin5 = math.Cos(2 * math.Pi / 5), math.Sin(2 * math.Pi / 5)
	cos25      = math.Cos(4 * math.Pi / 5)
	sin25      = math.Sin(4 * math.Pi / 5)
)

// scale is c·z for a real c, without the products of a complex one.
func scale(c float64, z complex128) complex128 { return complex(c*real(z), c*imag(z)) }

// minusI is -i·z.
func minusI(z complex128) complex128 { return complex(imag(z), -real(z)) }
