package serve

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm/jsonio"
)

// BenchmarkServeHTTP measures what the server's fronts cost a request: 16
// or 64 clients in the process send the text example's requests through
// the server's HTTP Handler (no sockets) as JSON and as binary tensors,
// through its gRPC service over an in-memory connection (raw contents),
// and call its engine's Run directly, the ways taking turns every
// iteration (2,000 requests each). It reports requests/s of each, their
// ratios to Run, and the requests per invocation each way: what the
// fronts' own work (decoding, encoding, metrics, routing, gRPC's framing)
// costs, and how it changes the groups the engine forms.
//
//	go test ./serve -run '^$' -bench ServeHTTP -benchtime 10x -count 3
func BenchmarkServeHTTP(b *testing.B) {
	// The collector's target genaic serve runs under (cmd/genaic/gc.go):
	// at Go's default the front's garbage doubled its time here.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for _, clients := range []int{16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchServeHTTP(b, clients) })
	}
}

func benchServeHTTP(b *testing.B, clients int) {
	const model, requests = "text_packed", 2000
	s := newServer(b, Config{Repo: repo(b, model), NoWarmup: true})
	md := s.model(model)
	f, err := os.Open(filepath.Join("..", "testdata", "packages", model, "requests.json"))
	if err != nil {
		b.Fatal(err)
	}
	reqs, err := jsonio.ReadRequests(f, filepath.Dir(f.Name()))
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	type body struct {
		b    []byte
		hlen int
	}
	jsonBodies, binBodies := make([]body, len(reqs)), make([]body, len(reqs))
	for i, r := range reqs {
		jsonBodies[i].b, _ = oipJSON(b, r, nil, false)
		binBodies[i].b, binBodies[i].hlen = oipJSON(b, r, map[string]any{"binary_data_output": true}, true)
	}
	h := s.Handler()
	url := "/v2/models/" + model + "/infer"
	viaHTTP := func(bodies []body) func(i int) {
		return func(i int) {
			bd := bodies[i%len(bodies)]
			r := httptest.NewRequest("POST", url, bytes.NewReader(bd.b))
			if bd.hlen > 0 {
				r.Header.Set(HeaderLength, strconv.Itoa(bd.hlen))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	}
	grpcReqs := make([]*oippb.ModelInferRequest, len(reqs))
	for i, r := range reqs {
		grpcReqs[i] = grpcRequest(model, r, true, nil)
	}
	gc := memGRPCClient(b, s)
	ways := []struct {
		name string
		one  func(i int)
	}{
		{"json", viaHTTP(jsonBodies)},
		{"binary", viaHTTP(binBodies)},
		{"grpc", func(i int) {
			if _, err := gc.ModelInfer(context.Background(), grpcReqs[i%len(grpcReqs)]); err != nil {
				b.Fatal(err)
			}
		}},
		{"grpc_stream", streamClients(b, gc, grpcReqs, clients)},
		{"run", func(i int) {
			if r := md.eng.Run(context.Background(), reqs[i%len(reqs)]); r.Err != nil {
				b.Fatal(r.Err)
			}
		}},
	}
	round := func(one func(i int)) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < requests; i = next.Add(1) - 1 {
					one(int(i))
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	times := make([]time.Duration, len(ways))
	calls, served := make([]int64, len(ways)), make([]int64, len(ways))
	for b.Loop() {
		for i, w := range ways {
			before := md.eng.Stats().Components["text_encoder"]
			times[i] += round(w.one)
			after := md.eng.Stats().Components["text_encoder"]
			calls[i] += after.Invocations - before.Invocations
			served[i] += after.Requests - before.Requests
		}
	}
	rate := func(i int) float64 { return float64(requests*b.N) / times[i].Seconds() }
	for i, w := range ways {
		b.ReportMetric(rate(i), w.name+"-req/s")
		b.ReportMetric(float64(served[i])/float64(max(calls[i], 1)), w.name+"-req/call")
	}
	run := len(ways) - 1
	for i, w := range ways[:run] {
		b.ReportMetric(rate(i)/rate(run), w.name+"/run")
	}
	b.ReportMetric(0, "ns/op") // the sum of three ways means nothing
}

// streamClients returns a way that sends request i through one
// ModelStreamInfer stream shared by the clients, each waiting for its
// answer as a unary caller would: the stream's answers come in any order,
// and a reader hands each to its client by id.
func streamClients(b *testing.B, gc oippb.GRPCInferenceServiceClient, reqs []*oippb.ModelInferRequest, clients int) func(i int) {
	st, err := gc.ModelStreamInfer(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.CloseSend() })
	var (
		mu      sync.Mutex // guards st.Send and waiting
		waiting = map[string]chan *oippb.ModelStreamInferResponse{}
		nextID  int
	)
	go func() {
		for {
			a, err := st.Recv()
			if err != nil {
				return
			}
			mu.Lock()
			ch := waiting[a.GetInferResponse().GetId()]
			delete(waiting, a.GetInferResponse().GetId())
			mu.Unlock()
			ch <- a
		}
	}()
	return func(i int) {
		ch := make(chan *oippb.ModelStreamInferResponse, 1)
		m := reqs[i%len(reqs)]
		mu.Lock()
		nextID++
		m.Id = strconv.Itoa(nextID) // Send encodes m before it returns
		waiting[m.Id] = ch
		err := st.Send(m)
		mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		if a := <-ch; a.ErrorMessage != "" {
			b.Fatal(a.ErrorMessage)
		}
	}
}

// memGRPCClient serves s's gRPC service over an in-memory connection and
// returns a client of it.
func memGRPCClient(b *testing.B, s *Server) oippb.GRPCInferenceServiceClient {
	lis := bufconn.Listen(1 << 20)
	g := s.NewGRPCServer()
	go g.Serve(lis)
	b.Cleanup(g.Stop)
	conn, err := grpc.NewClient("passthrough:///mem",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return oippb.NewGRPCInferenceServiceClient(conn)
}
