package jsonio

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// TestRequestsWhitespaceStream: a requests document padded with 32 MiB of
// whitespace (before it, between its tokens, inside its lists) and read
// through a pipe in small reads decodes to the requests of the compact
// document; whitespace inside strings, escaped quotes among it, is kept.
func TestRequestsWhitespaceStream(t *testing.T) {
	const id = `a  \"  b\\`
	compact := `{"requests":[{"id":"` + id + `","inputs":{"x":{"dtype":"int64","shape":[3],"data":[1,2,3]},"s":{"dtype":"bytes","shape":[1],"data":["  two\t spaces\" and a quote  "]}}},{"id":"c","inputs":{"x":{"dtype":"int64","shape":[1],"data":[-7]}}}]}`
	want, err := ReadRequests(strings.NewReader(compact), ".")
	if err != nil {
		t.Fatal(err)
	}
	// Whitespace after every structural character outside strings.
	ws := strings.Repeat(" \t\r\n", 1<<20) // 4 MiB
	var padded strings.Builder
	padded.WriteString(ws)
	inString, escaped := false, false
	for _, c := range []byte(compact) {
		padded.WriteByte(c)
		switch {
		case inString:
			inString = escaped || c != '"'
			escaped = !escaped && c == '\\'
		case c == '"':
			inString = true
		case c == '[' || c == '{' || c == ',' || c == ':':
			if padded.Len() < 32<<20 {
				padded.WriteString(ws)
			}
		}
	}
	padded.WriteString(ws)
	if padded.Len() < 32<<20 {
		t.Fatalf("the padded document is %d bytes", padded.Len())
	}
	pr, pw := io.Pipe()
	go func() {
		// One small write at a time, as a pipe hands them over.
		src := strings.NewReader(padded.String())
		buf := make([]byte, 4096)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				pw.Write(buf[:n])
			}
			if err != nil {
				break
			}
		}
		pw.Close()
	}()
	got, err := ReadRequests(pr, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || got[0].ID != `a  "  b\` {
		t.Fatalf("%d requests, the first %q; want %d, %q", len(got), got[0].ID, len(want), `a  "  b\`)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("request %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestSqueezed: whitespace runs outside strings become one space, the
// bytes of strings (escapes, quotes and whitespace) are kept, and a read
// of whitespace alone is not answered with nothing.
func TestSqueezed(t *testing.T) {
	in := "  {\"a \\\"  b\\\\\" :\n\n [1 ,\t 2]}   \"x  \" "
	out, err := io.ReadAll(iotest.OneByteReader(&squeezed{r: strings.NewReader(in)}))
	if err != nil {
		t.Fatal(err)
	}
	if want := " {\"a \\\"  b\\\\\" : [1 , 2]} \"x  \" "; string(out) != want {
		t.Errorf("squeezed %q into %q, want %q", in, out, want)
	}
	r := &squeezed{r: iotest.OneByteReader(bytes.NewReader([]byte("1" + strings.Repeat(" ", 100) + "2")))}
	buf := make([]byte, 8)
	var got []byte
	for {
		n, err := r.Read(buf)
		if n == 0 && err == nil {
			t.Fatal("a read answered nothing and no error")
		}
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if string(got) != "1 2" {
		t.Errorf("got %q", got)
	}
}
