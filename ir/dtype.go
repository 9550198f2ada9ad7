package ir

import "strings"

// DType is an element type in its canonical spelling.
type DType struct {
	Name string // canonical: float32, float16, bfloat16, float8e4m3fn, ..., int64, bool
	Size int    // bytes per element
}

// dtypes maps every accepted spelling to its canonical element type.
var dtypes = map[string]DType{}

func init() {
	for _, d := range []struct {
		dt      DType
		aliases []string
	}{
		{DType{"float32", 4}, []string{"fp32", "f32"}},
		{DType{"float16", 2}, []string{"fp16", "f16"}},
		{DType{"bfloat16", 2}, []string{"bf16"}},
		{DType{"float64", 8}, []string{"fp64", "f64", "double"}},
		{DType{"float8e4m3fn", 1}, []string{"float8_e4m3fn", "fp8e4m3fn", "fp8_e4m3fn"}},
		{DType{"float8e4m3fnuz", 1}, []string{"float8_e4m3fnuz", "fp8e4m3fnuz"}},
		{DType{"float8e5m2", 1}, []string{"float8_e5m2", "fp8e5m2", "fp8_e5m2"}},
		{DType{"float8e5m2fnuz", 1}, []string{"float8_e5m2fnuz", "fp8e5m2fnuz"}},
		{DType{"int8", 1}, nil}, {DType{"int16", 2}, nil}, {DType{"int32", 4}, nil}, {DType{"int64", 8}, nil},
		{DType{"uint8", 1}, nil}, {DType{"uint16", 2}, nil}, {DType{"uint32", 4}, nil}, {DType{"uint64", 8}, nil},
		{DType{"bool", 1}, nil},
	} {
		dtypes[d.dt.Name] = d.dt
		for _, a := range d.aliases {
			dtypes[a] = d.dt
		}
	}
}

// LookupDType returns the canonical element type of a spelling.
func LookupDType(s string) (DType, bool) {
	d, ok := dtypes[s]
	return d, ok
}

// DTypeNames returns the canonical dtype names, for messages.
func DTypeNames() []string {
	return []string{"float32 (fp32)", "float16 (fp16)", "bfloat16 (bf16)", "float64", "float8e4m3fn", "float8e4m3fnuz",
		"float8e5m2", "float8e5m2fnuz", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}
}

// SameDType reports whether two spellings name one element type. Unknown
// spellings are equal only to themselves.
func SameDType(a, b string) bool {
	da, okA := LookupDType(a)
	db, okB := LookupDType(b)
	if okA && okB {
		return da == db
	}
	return a == b
}

// DTypeSpellings returns the names DTypeNames shows, canonical and short
// forms alike: the candidates of a "did you mean" for an unknown dtype.
func DTypeSpellings() []string {
	var out []string
	for _, n := range DTypeNames() {
		for _, f := range strings.Fields(n) {
			out = append(out, strings.Trim(f, "()"))
		}
	}
	return out
}
