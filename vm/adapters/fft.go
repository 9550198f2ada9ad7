package adapters

import (
	"math"
	"math/bits"

	"gonum.org/v1/gonum/dsp/fourier"
)

// powerSpectrum computes the power |X_k|² of the n/2+1 coefficients of a
// frame of n real samples. It holds buffers a frame is transformed in:
// one frame at a time.
type powerSpectrum interface {
	power(spec, frame []float64)
}

// newPowerSpectrum is the transform of frames of n samples: realFFT where
// n is a power of two of at least 4 (the n_fft of most front ends), else
// gonum's mixed-radix FFT (Whisper's 400).
func newPowerSpectrum(n int) powerSpectrum {
	if n >= 4 && n&(n-1) == 0 {
		return newRealFFT(n)
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

// realFFT transforms n real samples, n a power of two, as one complex FFT
// of half = n/2 points (the even samples as real parts, the odd as
// imaginary ones) and a split of its result into the coefficients of the
// real frame: half the butterflies of a complex FFT of n.
type realFFT struct {
	half int
	// rev is the bit-reversed index of each of the half points: where
	// the iterative butterflies read it.
	rev []int32
	// roots are the butterflies' twiddles, stage by stage from the
	// second: for butterflies of size s, exp(-2πi·j/s) for j < s/2 (the
	// stage reads them in order); split are exp(-2πi·k/n) for k < half,
	// the split's.
	roots, split []complex128
	z            []complex128
}

func newRealFFT(n int) *realFFT {
	half := n / 2
	f := &realFFT{half: half, rev: make([]int32, half), split: make([]complex128, half), z: make([]complex128, half)}
	shift := bits.UintSize - bits.TrailingZeros(uint(half))
	for i := range half {
		f.rev[i] = int32(bits.Reverse(uint(i)) >> shift)
	}
	// Each root from its own angle, not by recurrence, whose errors
	// would grow along the table.
	for size := 4; size <= half; size *= 2 {
		for j := range size / 2 {
			s, c := math.Sincos(-2 * math.Pi * float64(j) / float64(size))
			f.roots = append(f.roots, complex(c, s))
		}
	}
	for k := range f.split {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		f.split[k] = complex(c, s)
	}
	return f
}

func (f *realFFT) power(spec, frame []float64) {
	half, z := f.half, f.z
	frame = frame[:2*half]
	for i, r := range f.rev {
		z[r] = complex(frame[2*i], frame[2*i+1])
	}
	// The first stage's twiddles are all 1.
	for i := 0; i+1 < half; i += 2 {
		u, v := z[i], z[i+1]
		z[i], z[i+1] = u+v, u-v
	}
	roots := f.roots
	for size := 4; size <= half; size <<= 1 {
		m := size / 2
		w := roots[:m]
		roots = roots[m:]
		for start := 0; start < half; start += size {
			lo, hi := z[start:start+m], z[start+m:start+size]
			hi = hi[:len(w)]
			for j, r := range w {
				u, v := lo[j], hi[j]*r
				lo[j], hi[j] = u+v, u-v
			}
		}
	}
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
