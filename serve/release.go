package serve

import (
	"context"
	"sync"

	"google.golang.org/grpc/stats"

	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// Responses released once written.
//
// An engine's response views its groups' output buffers, which the
// engine writes later groups' outputs into once every response viewing
// them is released (vm.Response.Release). The HTTP endpoint releases a
// response as soon as it is written: the writer copies what it is given.
// A gRPC response carries the outputs' memory itself (raw_output_contents
// aliases it), and grpc-go may read a message after the handler returns
// it, stats handlers even after it is sent: a unary call's response is
// released at the call's end (releaseAtEnd, a stats handler), when
// nothing reads it any more. A stream's messages are sent by the handler
// itself, and Send encodes a message (copying the outputs' memory into
// the frame it writes) and tells the stats handlers of it before it
// returns: each is released as its Send returns (ModelStreamInfer). A
// stream's end may be hours away: holding its responses until then, as a
// unary call's are, would keep every buffer they view. (grpc.EnableTracing,
// whose traces would read messages later, stays off: genaic never sets it.)

// releaseAtEnd releases the engine response of every ModelInfer call
// when the call ends.
type releaseAtEnd struct{}

// heldKey is the context key of a ModelInfer call's heldResponse.
type heldKey struct{}

// heldResponse is the engine response a unary call answered with.
type heldResponse struct {
	mu   sync.Mutex
	resp vm.Response
	done bool
}

// keep makes resp the call's response, released at the call's end (or at
// once where the call has ended, once its handler is done with it); a
// call without a heldResponse keeps nothing.
func keep(ctx context.Context, resp vm.Response) {
	h, _ := ctx.Value(heldKey{}).(*heldResponse)
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done { // the call ended first (cancelled while running)
		resp.Release()
		return
	}
	h.resp = resp
}

func (releaseAtEnd) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if info.FullMethodName != oippb.GRPCInferenceService_ModelInfer_FullMethodName {
		return ctx
	}
	return context.WithValue(ctx, heldKey{}, &heldResponse{})
}

func (releaseAtEnd) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.End); !ok {
		return
	}
	h, _ := ctx.Value(heldKey{}).(*heldResponse)
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	h.resp.Release()
	h.resp = vm.Response{}
}

func (releaseAtEnd) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (releaseAtEnd) HandleConn(context.Context, stats.ConnStats)                       {}
