package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestScalarOverHTTP: the sample_rate package takes its rate as a rank-0
// int64 and answers a rank-0 hop. Sent as shape [], the rate reaches the
// model, and the hop comes back with shape [] (a list, as the protocol
// has every shape, never null), as JSON data and as binary data alike.
func TestScalarOverHTTP(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "sample_rate")})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	for _, binary := range []bool{false, true} {
		body := `{"inputs":[{"name":"audio","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]},` +
			`{"name":"sr","datatype":"INT64","shape":[],"data":[8000]}]`
		if binary {
			body += `,"parameters":{"binary_data_output":true}`
		}
		resp, err := http.Post(hs.URL+"/v2/models/sample_rate/infer", "application/json", bytes.NewReader([]byte(body+"}")))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("binary %v: %d %s (%v)", binary, resp.StatusCode, b, err)
		}
		if h := resp.Header.Get(HeaderLength); h != "" {
			n, err := strconv.Atoi(h)
			if err != nil || n > len(b) {
				t.Fatalf("binary %v: header length %q of a %d-byte body", binary, h, len(b))
			}
			b = b[:n]
		}
		var r struct {
			Outputs []struct {
				Name  string
				Shape *[]int64
				Data  []float64
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("binary %v: %s: %v", binary, b, err)
		}
		found := false
		for _, o := range r.Outputs {
			if o.Name != "hop" {
				continue
			}
			found = true
			if o.Shape == nil || len(*o.Shape) != 0 {
				t.Errorf("binary %v: hop has shape %v in %s, want []", binary, o.Shape, b)
			}
			if !binary && (len(o.Data) != 1 || o.Data[0] != 80) {
				t.Errorf("hop at 8 kHz is %v, want [80]", o.Data)
			}
		}
		if !found {
			t.Errorf("binary %v: no hop in %s", binary, b)
		}
	}
}
