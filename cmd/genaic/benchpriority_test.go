package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/genaic/genaic/serve"
	"github.com/genaic/genaic/serve/oippb"
)

// TestBenchPriority: with --priority every request a bench sends names
// it, in each of the four modes (the HTTP header's JSON and gRPC's
// parameters), and the server answers them all.
func TestBenchPriority(t *testing.T) {
	s, err := serve.New(serve.Config{Repo: textPkg, NoWarmup: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var mu sync.Mutex
	seen := map[string][]any{} // by protocol, the priority each request named
	saw := func(protocol string, p any) {
		mu.Lock()
		defer mu.Unlock()
		seen[protocol] = append(seen[protocol], p)
	}
	h := s.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			header := body
			if n, err := strconv.Atoi(r.Header.Get(serve.HeaderLength)); err == nil && n <= len(body) {
				header = body[:n]
			}
			var doc struct {
				Parameters map[string]any `json:"parameters"`
			}
			json.Unmarshal(header, &doc)
			saw("http", doc.Parameters["priority"])
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	priority := func(m any) any {
		r, ok := m.(*oippb.ModelInferRequest)
		if !ok || r.Parameters["priority"] == nil {
			return nil
		}
		return r.Parameters["priority"].GetInt64Param()
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := s.NewGRPCServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if _, infer := req.(*oippb.ModelInferRequest); infer {
				saw("grpc", priority(req))
			}
			return handler(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			return handler(srv, recording{ss, func(m any) { saw("grpc_stream", priority(m)) }})
		}))
	go g.Serve(lis)
	t.Cleanup(g.Stop)

	rep := bench(t, textPkg, "--requests", filepath.Join(textPkg, "requests.json"), "--url", hs.URL, "--grpc", lis.Addr().String(),
		"--priority", "3", "--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "4")
	if rep.Server == nil || rep.Server.Priority != 3 {
		t.Errorf("the report's server %+v; want priority 3", rep.Server)
	}
	for _, m := range rep.Modes {
		if m.Failed != 0 {
			t.Errorf("%s: %d requests failed", m.Name, m.Failed)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, protocol := range []string{"http", "grpc", "grpc_stream"} {
		if len(seen[protocol]) == 0 {
			t.Errorf("%s: no request seen", protocol)
		}
		for _, p := range seen[protocol] {
			if p != float64(3) && p != int64(3) {
				t.Errorf("%s: a request named priority %v, want 3", protocol, p)
				break
			}
		}
	}
}

// recording is a server stream that shows each message it receives.
type recording struct {
	grpc.ServerStream
	saw func(m any)
}

func (r recording) RecvMsg(m any) error {
	err := r.ServerStream.RecvMsg(m)
	if err == nil {
		r.saw(m)
	}
	return err
}
