package serve

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// streamAll sends reqs on a new ModelStreamInfer stream, closes its side,
// and reads every answer until the stream ends: the answers by id, and the
// stream's end (nil for a clean one).
func streamAll(ctx context.Context, t *testing.T, c oippb.GRPCInferenceServiceClient, reqs []*oippb.ModelInferRequest) (map[string]*oippb.ModelStreamInferResponse, error) {
	t.Helper()
	st, err := c.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		for _, r := range reqs {
			if err := st.Send(r); err != nil {
				sent <- err
				return
			}
		}
		sent <- st.CloseSend()
	}()
	got := map[string]*oippb.ModelStreamInferResponse{}
	for {
		a, err := st.Recv()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			if serr := <-sent; serr != nil && err == nil {
				err = serr
			}
			return got, err
		}
		id := a.GetInferResponse().GetId()
		if got[id] != nil {
			t.Errorf("request %s answered twice", id)
		}
		got[id] = a
	}
}

// streamGoroutinesGone fails the test unless no goroutine runs the stream
// handler's code any more (its reader and its workers end with the
// stream), waiting for them to end up to a bound that only guards against
// a hang.
func streamGoroutinesGone(t *testing.T) {
	t.Helper()
	var left string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		left = ""
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "ModelStreamInfer") {
				left = g
			}
		}
		if left == "" {
			return
		}
	}
	t.Errorf("a goroutine of an ended stream is still there:\n%s", left)
}

// slowSend waits a little before it sends each message.
type slowSend struct{ grpc.ServerStream }

func (s slowSend) SendMsg(m any) error {
	time.Sleep(time.Millisecond)
	return s.ServerStream.SendMsg(m)
}

// TestStreamInfer: one stream carries 120 requests of the image package
// (raw and typed contents alternating) and three bad ones; each is
// answered once, by id: the good ones as the solo engine answers them, the
// bad ones with the rule's message while the stream goes on; the stream
// ends cleanly once the client has closed its side, and the requests are
// counted under grpc_stream; the groups' output buffers are written again
// once their answers are sent. (That a stream's requests group is shown by
// TestStreamBackpressure, where they wait behind a held worker.)
func TestStreamInfer(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "image_padded"), Defaults: ModelConfig{MaxDelay: delay(20 * time.Millisecond)}})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	// Each message waits a little before it is encoded, so that a
	// response released before its Send returned would have its buffers
	// written by later groups while its message still views them.
	c := grpcClient(t, s, grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, slowSend{ss})
	}))
	reqs, err := readRequests(s.model("image_padded").Dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := solo(t, s, "image_padded", engine.Options{})
	reused := func() int64 { return s.Engine("image_padded").Stats().Components["encoder"].OutputsReused }
	reusedBefore := reused()
	const good = 120
	var send []*oippb.ModelInferRequest
	want := map[string]vm.Request{}
	for i := range good {
		r := reqs[i%len(reqs)]
		id := fmt.Sprintf("%s-%d", r.ID, i)
		m := grpcRequest("image_padded", r, i%2 == 0, nil)
		m.Id = id
		send = append(send, m)
		want[id] = r
	}
	bad := map[string]string{} // id → what its error names
	unknown := grpcRequest("nope", reqs[0], true, nil)
	unknown.Id, bad["unknown-model"] = "unknown-model", "no model"
	extra := grpcRequest("image_padded", reqs[0], true, nil)
	extra.Id, bad["bad-input"] = "bad-input", "run/input"
	extra.Inputs[0].Name = "not_an_input"
	short := grpcRequest("image_padded", reqs[0], true, nil)
	short.Id, bad["short-raw"] = "short-raw", "raw_input_contents"
	short.RawInputContents = short.RawInputContents[:1]
	send = append(send[:40], append([]*oippb.ModelInferRequest{unknown, extra, short}, send[40:]...)...)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got, err := streamAll(ctx, t, c, send)
	if err != nil {
		t.Fatalf("stream ended with %v, want a clean end", err)
	}
	if len(got) != len(send) {
		t.Errorf("%d answers for %d requests", len(got), len(send))
	}
	for id, r := range want {
		a := got[id]
		if a == nil {
			t.Errorf("%s: no answer", id)
			continue
		}
		if a.ErrorMessage != "" {
			t.Errorf("%s: %s", id, a.ErrorMessage)
			continue
		}
		out, err := grpcOutputs(a.InferResponse)
		if err == nil {
			err = same(out, ref(r).Outputs.Map())
		}
		if err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	for id, names := range bad {
		a := got[id]
		switch {
		case a == nil:
			t.Errorf("%s: no answer", id)
		case !strings.Contains(a.ErrorMessage, names):
			t.Errorf("%s: error_message %q, want one naming %q", id, a.ErrorMessage, names)
		case len(a.InferResponse.Outputs) != 0:
			t.Errorf("%s failed but has outputs", id)
		}
	}
	// Every answer was right while the groups' buffers were written
	// again, each response released as its message was sent.
	if n := reused(); n <= reusedBefore {
		t.Errorf("no group's output buffers were reused after their answers were sent (%d, %d before the stream)", n, reusedBefore)
	}
	streamGoroutinesGone(t)
	// The unknown model's request is counted nowhere: it names no model.
	if n := metric(t, scrape(t, ts.URL), `genaic_requests_total{model="image_padded",protocol="grpc_stream"}`); n != good+2 {
		t.Errorf("genaic_requests_total for grpc_stream = %v, want %d", n, good+2)
	}
}

// TestStreamBackpressure: while the only worker is held, a client sends
// more requests on one stream than the stream takes at once; the server
// takes streamInFlight of them and reads no more until they are answered
// (gRPC's flow control holds the client back), then answers them all, the
// queued ones in groups.
func TestStreamBackpressure(t *testing.T) {
	s, g, ref := gatedServer(t, 4096)
	c := grpcClient(t, s)
	all, err := readRequests(s.model("image_padded").Dir)
	if err != nil {
		t.Fatal(err)
	}
	// A request of no image is answered without the encoder: only those
	// with images wait for the gate.
	var reqs []vm.Request
	for _, r := range all {
		if r.Inputs["pixel_patches"].Shape[0] > 0 {
			reqs = append(reqs, r)
		}
	}
	const n = streamInFlight + 150
	send := make([]*oippb.ModelInferRequest, n)
	for i := range send {
		send[i] = grpcRequest("image_padded", reqs[i%len(reqs)], true, nil)
		send[i].Id = fmt.Sprint(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		got map[string]*oippb.ModelStreamInferResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := streamAll(ctx, t, c, send)
		done <- result{got, err}
	}()
	<-g.entered
	admitted := func() int64 { a, _ := s.Counts(); return a }
	for admitted() < streamInFlight && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	// The client has more to send; give the stream time to take more than
	// its share if it would.
	time.Sleep(200 * time.Millisecond)
	if a := admitted(); a != streamInFlight {
		t.Errorf("%d requests of one stream taken while none could be answered, want %d", a, streamInFlight)
	}
	g.release()
	res := <-done
	if res.err != nil {
		t.Fatalf("stream ended with %v", res.err)
	}
	if max := s.Engine("image_padded").Stats().Components["encoder"].MaxGroupRequests; max < 2 {
		t.Errorf("a stream's requests queued behind a held worker formed no group of more than one (max %d)", max)
	}
	for i, m := range send {
		a := res.got[m.Id]
		if a == nil || a.ErrorMessage != "" {
			t.Errorf("%s: %v", m.Id, a)
			continue
		}
		out, err := grpcOutputs(a.InferResponse)
		if err == nil {
			err = same(out, ref(reqs[i%len(reqs)]).Outputs.Map())
		}
		if err != nil {
			t.Errorf("%s: %v", m.Id, err)
		}
	}
}

// TestStreamDrain: a server that starts draining answers the requests its
// streams have read and ends them UNAVAILABLE; a stream opened while it
// drains ends UNAVAILABLE at once.
func TestStreamDrain(t *testing.T) {
	s, g, ref := gatedServer(t, 64)
	c := grpcClient(t, s)
	reqs, err := readRequests(s.model("image_padded").Dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := c.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		m := grpcRequest("image_padded", reqs[i%len(reqs)], true, nil)
		m.Id = fmt.Sprint(i)
		if err := st.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	<-g.entered
	for a, _ := s.Counts(); a < n && ctx.Err() == nil; a, _ = s.Counts() {
		time.Sleep(time.Millisecond)
	}
	s.SetDraining()
	g.release()
	answered := map[string]bool{}
	for {
		a, err := st.Recv()
		if err != nil {
			if grpcstatus.Code(err) != codes.Unavailable {
				t.Errorf("stream of a draining server ended with %v, want UNAVAILABLE", err)
			}
			break
		}
		id := a.GetInferResponse().GetId()
		var i int
		fmt.Sscan(id, &i)
		out, err := grpcOutputs(a.InferResponse)
		if err == nil {
			err = same(out, ref(reqs[i%len(reqs)]).Outputs.Map())
		}
		if a.ErrorMessage != "" || err != nil {
			t.Errorf("%s: %q %v", id, a.ErrorMessage, err)
		}
		answered[id] = true
	}
	if len(answered) != n {
		t.Errorf("%d of the %d requests read before the drain answered", len(answered), n)
	}
	late, err := c.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := late.Recv(); grpcstatus.Code(err) != codes.Unavailable {
		t.Errorf("a stream opened while draining: %v, want UNAVAILABLE", err)
	}
	// The client never closed its side: the handler's reader, waiting in
	// Recv when the stream ended, must end too.
	streamGoroutinesGone(t)
}
