package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/genaic/genaic/serve/oippb"
)

// TestRepeatedOutputs: a request naming one output 10⁵ times is refused
// before it runs, over HTTP (400) and gRPC (InvalidArgument), with a short
// message naming the output; named once, the output is answered once.
func TestRepeatedOutputs(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "image_padded")})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	gc := grpcClient(t, s)
	url := ts.URL + "/v2/models/image_padded/infer"
	reqs, err := readRequests(s.model("image_padded").Dir)
	if err != nil {
		t.Fatal(err)
	}
	const times = 100_000
	ran := func() int64 { return s.Engine("image_padded").Stats().Components["encoder"].Requests }
	before := ran()

	outputs := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = map[string]any{"name": "embeddings"}
		}
		return out
	}
	httpBody := func(n int) []byte {
		body, _ := oipJSON(t, reqs[0], nil, false)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		m["outputs"] = outputs(n)
		b, _ := json.Marshal(m)
		return b
	}
	a := post(ts.Client(), url, httpBody(times), 0)
	if a.status != 400 || !strings.Contains(a.message, "output `embeddings` is asked for more than once") || len(a.message) > 200 {
		t.Errorf("HTTP, one output %d times: %d %q, want 400 naming the output", times, a.status, a.message)
	}
	g := grpcRequest("image_padded", reqs[0], true, nil)
	for range times {
		g.Outputs = append(g.Outputs, &oippb.ModelInferRequest_InferRequestedOutputTensor{Name: "embeddings"})
	}
	_, err = gc.ModelInfer(context.Background(), g)
	if st, _ := grpcstatus.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "output `embeddings` is asked for more than once") || len(st.Message()) > 200 {
		t.Errorf("gRPC, one output %d times: %v, want InvalidArgument naming the output", times, err)
	}
	if n := ran(); n != before {
		t.Errorf("the encoder ran %d requests for the refused ones, want none", n-before)
	}

	// An output the model lacks is refused before the request runs too.
	body := strings.Replace(string(httpBody(1)), `"name":"embeddings"`, `"name":"nope"`, 1)
	if a := post(ts.Client(), url, []byte(body), 0); a.status != 400 || !strings.Contains(a.message, "no output `nope`") {
		t.Errorf("HTTP, an unknown output: %d %q, want 400 naming it", a.status, a.message)
	}
	if n := ran(); n != before {
		t.Errorf("the encoder ran %d requests for the refused ones, want none", n-before)
	}

	if a := post(ts.Client(), url, httpBody(1), 0); a.status != 200 || len(a.outputs)+len(a.items) != 1 {
		t.Errorf("HTTP, the output once: %d %v, want 200 with it", a.status, a.err)
	}
	g.Outputs = g.Outputs[:1]
	resp, err := gc.ModelInfer(context.Background(), g)
	if err != nil || len(resp.Outputs) != 1 {
		t.Errorf("gRPC, the output once: %v, want it once", err)
	}
}

// patience bounds how long a test waits for a server to close a connection
// its timeouts should close: far beyond the short timeouts the tests
// configure, so that only a connection left open fails.
const patience = time.Minute

// serveHTTP serves s's HTTP front as genaic serve does (NewHTTPServer) on
// a local port.
func serveHTTP(t *testing.T, s *Server) (string, *http.Server) {
	t.Helper()
	lis := localListener(t)
	hs := s.NewHTTPServer()
	go hs.Serve(lis)
	t.Cleanup(func() { hs.Close() })
	return lis.Addr().String(), hs
}

// dial opens a raw connection and writes what a client sends first.
func dial(t *testing.T, addr, send string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, send); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedByServer reads c until the server closes it and returns what it
// read; a connection still open after patience fails the test.
func closedByServer(t *testing.T, what string, c io.Reader) string {
	t.Helper()
	if conn, ok := c.(net.Conn); ok {
		conn.SetReadDeadline(time.Now().Add(patience))
	}
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the connection is still open after %v", what, patience)
	}
	return string(b)
}

// TestSlowClients: a client trickling a body is answered 408 and cut off
// after the body timeout, and cannot hold a drain; one that never finishes
// its headers, or leaves its keep-alive connection idle, loses the
// connection; a Content-Length over the limit is answered 413 without a
// byte of the body read; a gRPC connection that never sends the HTTP/2
// preface is closed. The refused bodies are counted.
func TestSlowClients(t *testing.T) {
	const timeout = 200 * time.Millisecond
	s := newServer(t, Config{Repo: repo(t, "image_padded"), MaxRequestBytes: 1 << 16,
		HeaderTimeout: timeout, BodyTimeout: timeout, IdleTimeout: timeout, HandshakeTimeout: timeout})
	addr, hs := serveHTTP(t, s)
	infer := "POST /v2/models/image_padded/infer HTTP/1.1\r\nHost: genaic\r\n"

	trickle := func() (net.Conn, chan struct{}) {
		c := dial(t, addr, infer+"Content-Length: 1000\r\n\r\n{")
		stop := make(chan struct{})
		go func() {
			tick := time.NewTicker(timeout / 4)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		return c, stop
	}
	c, stop := trickle()
	got := closedByServer(t, "a trickled body", c)
	close(stop)
	if !strings.HasPrefix(got, "HTTP/1.1 408") || !strings.Contains(got, "did not arrive within") {
		t.Errorf("a trickled body: answered %q, want 408", got)
	}

	got = closedByServer(t, "headers never finished", dial(t, addr, "POST /v2/health/live HTTP/1.1\r\nHost: genaic\r\n"))
	if strings.Contains(got, "200 OK") {
		t.Errorf("headers never finished: answered %q", got)
	}

	c = dial(t, addr, "GET /v2/health/live HTTP/1.1\r\nHost: genaic\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 || resp.Close {
		t.Fatalf("a keep-alive request: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	c.SetReadDeadline(time.Now().Add(patience))
	if _, err := br.ReadByte(); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("an idle keep-alive connection is still open after %v", patience)
	}

	// No body follows the headers: a server that read it before
	// answering would answer 408, after the body timeout.
	got = closedByServer(t, "an oversized Content-Length", dial(t, addr, infer+fmt.Sprintf("Content-Length: %d\r\n\r\n", 1<<20)))
	if !strings.HasPrefix(got, "HTTP/1.1 413") || !strings.Contains(got, "larger than the server takes") {
		t.Errorf("an oversized Content-Length: answered %q, want 413", got)
	}

	lis := localListener(t)
	g := s.NewGRPCServer()
	go g.Serve(lis)
	defer g.Stop()
	closedByServer(t, "a gRPC connection without the HTTP/2 preface", dial(t, lis.Addr().String(), ""))

	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	text := scrape(t, ts.URL)
	if n := metric(t, text, `genaic_refused_bodies_total{reason="too_large"}`); n != 1 {
		t.Errorf("genaic_refused_bodies_total too_large = %v, want 1", n)
	}
	if n := metric(t, text, `genaic_refused_bodies_total{reason="timeout"}`); n != 1 {
		t.Errorf("genaic_refused_bodies_total timeout = %v, want 1", n)
	}

	// A trickled body holds a drain no longer than the body timeout.
	c, stop = trickle()
	defer close(stop)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		t.Errorf("shutting down with a client trickling a body: %v", err)
	}
}
