package serve

import (
	"context"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// grpcService implements the protocol's GRPCInferenceService.
type grpcService struct {
	oippb.UnimplementedGRPCInferenceServiceServer
	s *Server
}

// NewGRPCServer returns a gRPC server with the inference service, the
// standard health service (grpc.health.v1: the server as "", each model
// by its name) and server reflection registered, taking messages up to
// the server's request size limit.
func (s *Server) NewGRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	opts = append([]grpc.ServerOption{grpc.MaxRecvMsgSize(int(s.cfg.MaxRequestBytes)), grpc.MaxSendMsgSize(1 << 30),
		grpc.StatsHandler(releaseAtEnd{}), grpc.ForceServerCodecV2(newInferCodec())}, append(s.grpcConnOptions(), opts...)...)
	g := grpc.NewServer(opts...)
	oippb.RegisterGRPCInferenceServiceServer(g, &grpcService{s: s})
	healthpb.RegisterHealthServer(g, s.health)
	reflection.Register(g)
	return g
}

func (g *grpcService) ServerLive(context.Context, *oippb.ServerLiveRequest) (*oippb.ServerLiveResponse, error) {
	return &oippb.ServerLiveResponse{Live: true}, nil
}

func (g *grpcService) ServerReady(context.Context, *oippb.ServerReadyRequest) (*oippb.ServerReadyResponse, error) {
	return &oippb.ServerReadyResponse{Ready: g.s.Ready()}, nil
}

func (g *grpcService) model(name, version string) (*Model, error) {
	md := g.s.model(name)
	if md == nil {
		return nil, status.Errorf(codes.NotFound, "no model %q: this server serves %s", name, g.s.served())
	}
	if version != "" && version != Version {
		return nil, status.Errorf(codes.NotFound, "model %s has no version %q: its only version is %s", name, version, Version)
	}
	return md, nil
}

func (g *grpcService) ModelReady(_ context.Context, r *oippb.ModelReadyRequest) (*oippb.ModelReadyResponse, error) {
	md, err := g.model(r.Name, r.Version)
	if err != nil {
		return nil, err
	}
	return &oippb.ModelReadyResponse{Ready: md.ready.Load() && !g.s.draining.Load()}, nil
}

func (g *grpcService) ServerMetadata(context.Context, *oippb.ServerMetadataRequest) (*oippb.ServerMetadataResponse, error) {
	return &oippb.ServerMetadataResponse{Name: "genaic", Version: Version, Extensions: tritonExtensions}, nil
}

// ModelStatistics answers Triton's statistics extension (triton.go): one
// model's, or every model's when the request names none.
func (g *grpcService) ModelStatistics(_ context.Context, r *oippb.ModelStatisticsRequest) (*oippb.ModelStatisticsResponse, error) {
	var md *Model
	if r.Name != "" {
		var err error
		if md, err = g.model(r.Name, r.Version); err != nil {
			return nil, err
		}
	}
	resp := &oippb.ModelStatisticsResponse{}
	for _, ms := range g.s.statsOf(md) {
		resp.ModelStats = append(resp.ModelStats, ms.proto())
	}
	return resp, nil
}

// ModelConfig answers Triton's model configuration extension (triton.go).
func (g *grpcService) ModelConfig(_ context.Context, r *oippb.ModelConfigRequest) (*oippb.ModelConfigResponse, error) {
	md, err := g.model(r.Name, r.Version)
	if err != nil {
		return nil, err
	}
	return &oippb.ModelConfigResponse{Config: md.config().proto()}, nil
}

func (g *grpcService) ModelMetadata(_ context.Context, r *oippb.ModelMetadataRequest) (*oippb.ModelMetadataResponse, error) {
	md, err := g.model(r.Name, r.Version)
	if err != nil {
		return nil, err
	}
	conv := func(ts []tensorMeta) []*oippb.ModelMetadataResponse_TensorMetadata {
		var out []*oippb.ModelMetadataResponse_TensorMetadata
		for _, t := range ts {
			tm := &oippb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape}
			for k, v := range t.Parameters {
				if tm.Parameters == nil {
					tm.Parameters = map[string]*oippb.InferParameter{}
				}
				tm.Parameters[k] = inferParam(v)
			}
			out = append(out, tm)
		}
		return out
	}
	return &oippb.ModelMetadataResponse{Name: md.Name, Versions: []string{Version}, Platform: "genaic", Inputs: conv(md.inputs), Outputs: conv(md.outputs)}, nil
}

// itemsParams are the gRPC parameters of a tensor in the items form.
func itemsParams(l itemsLayout) map[string]*oippb.InferParameter {
	return map[string]*oippb.InferParameter{itemsParam: inferParam(l.grpcValue())}
}

// grpcError is the status of a failed request: the rule's code, and the
// RunError's text (which names the rule) as message.
func grpcError(err error) error {
	re := asRun(err)
	return status.Error(grpcCode(re.Rule), re.Error())
}

// inferParam is a metadata parameter's value as gRPC carries it: a bool,
// an int64 or a string.
func inferParam(v any) *oippb.InferParameter {
	switch x := v.(type) {
	case bool:
		return &oippb.InferParameter{ParameterChoice: &oippb.InferParameter_BoolParam{BoolParam: x}}
	case int64:
		return &oippb.InferParameter{ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: x}}
	}
	return &oippb.InferParameter{ParameterChoice: &oippb.InferParameter_StringParam{StringParam: fmt.Sprint(v)}}
}

func paramValue(p *oippb.InferParameter) any {
	switch v := p.GetParameterChoice().(type) {
	case *oippb.InferParameter_BoolParam:
		return v.BoolParam
	case *oippb.InferParameter_Int64Param:
		return v.Int64Param
	case *oippb.InferParameter_StringParam:
		return v.StringParam
	case *oippb.InferParameter_DoubleParam:
		return v.DoubleParam
	case *oippb.InferParameter_Uint64Param:
		return v.Uint64Param
	}
	return nil
}

func (g *grpcService) ModelInfer(ctx context.Context, r *oippb.ModelInferRequest) (*oippb.ModelInferResponse, error) {
	out, resp, err := g.infer(ctx, r, "grpc")
	keep(ctx, resp) // released at the call's end (release.go)
	return out, err
}

// infer answers one request, or fails with its status. Its message views
// the engine's response (returned too), which the caller releases once
// the message is sent.
func (g *grpcService) infer(ctx context.Context, r *oippb.ModelInferRequest, protocol string) (*oippb.ModelInferResponse, vm.Response, error) {
	md, err := g.model(r.ModelName, r.ModelVersion)
	if err != nil {
		return nil, vm.Response{}, err
	}
	req, cp, err := decodeGRPC(md, r)
	if err != nil {
		g.s.refused(md, protocol, err)
		return nil, vm.Response{}, grpcError(err)
	}
	resp := g.s.infer(ctx, md, protocol, req, cp)
	out, err := message(md, r, resp)
	return out, resp, err
}

// message is the ModelInferResponse of r's engine response, or the status
// it failed with.
func message(md *Model, r *oippb.ModelInferRequest, resp vm.Response) (*oippb.ModelInferResponse, error) {
	if resp.Err != nil {
		return nil, grpcError(resp.Err)
	}
	names, err := md.outputOrder(resp, asked(r))
	if err != nil {
		return nil, grpcError(err)
	}
	out := &oippb.ModelInferResponse{ModelName: md.Name, ModelVersion: Version, Id: r.Id,
		Outputs: make([]*oippb.ModelInferResponse_InferOutputTensor, 0, len(names)), RawOutputContents: make([][]byte, 0, len(names))}
	for _, n := range names {
		t, items, err := output(resp, n)
		if err != nil {
			return nil, grpcError(err)
		}
		ot := &oippb.ModelInferResponse_InferOutputTensor{Name: n, Datatype: Datatype(t.DType), Shape: t.Shape}
		if items.isSet() {
			ot.Parameters = itemsParams(items)
		}
		out.Outputs = append(out.Outputs, ot)
		out.RawOutputContents = append(out.RawOutputContents, toBytes(t))
	}
	return out, nil
}

// streamInFlight bounds the requests of one ModelStreamInfer stream that
// are being answered at once. A stream at the bound reads no more of the
// client's messages until one is answered, so that gRPC's flow control
// holds back a client that sends faster than the models answer, instead
// of the stream's requests filling the components' queues.
const streamInFlight = 256

// ModelStreamInfer answers every request of a stream as ModelInfer would,
// each as soon as it is done (several run at once, so that they group as
// concurrent calls do), in the order they finish. A request that fails is
// answered with its error_message (the text ModelInfer's status would
// carry) and an infer_response naming its model and id; the stream goes
// on. The stream ends when the client closes its side and every request
// is answered, when the client goes away (its requests are cancelled), or
// when the server starts draining: the requests read by then are answered
// and the stream ends UNAVAILABLE, so that the client sends the requests
// it has no answer for to another replica.
func (g *grpcService) ModelStreamInfer(st oippb.GRPCInferenceService_ModelStreamInferServer) error {
	ctx, cancel := context.WithCancel(st.Context())
	defer cancel()
	var (
		wg      sync.WaitGroup
		sendMu  sync.Mutex
		sendErr error
	)
	answer := func(r *oippb.ModelInferRequest) {
		msg, resp := g.streamAnswer(ctx, r)
		// Send encodes the message before it returns, so the outputs it
		// views are released then (release.go).
		defer resp.Release()
		sendMu.Lock()
		defer sendMu.Unlock()
		if sendErr != nil {
			return
		}
		if sendErr = st.Send(msg); sendErr != nil {
			cancel() // the client is gone: its other requests need no answer
		}
	}
	// Requests are answered by workers that live as long as the stream,
	// at most streamInFlight of them: a request goes to an idle one, or to
	// a new one, or waits for one to be idle. (A goroutine per request
	// grew a fresh stack through the engine's calls every time.) The
	// stream is read on a goroutine of its own, which hands each request
	// to a worker itself, so that the handler can stop taking requests
	// while a read waits: at a drain, or when the client goes away. Once
	// stop is closed, or stopped set (under takeMu), no request is taken.
	work := make(chan *oippb.ModelInferRequest)
	stop := make(chan struct{})
	var (
		takeMu  sync.Mutex
		stopped bool
		workers int
	)
	take := func(r *oippb.ModelInferRequest) bool {
		takeMu.Lock()
		defer takeMu.Unlock()
		if stopped {
			return false
		}
		select {
		case work <- r:
			return true
		default:
		}
		if workers < streamInFlight {
			workers++
			wg.Go(func() {
				for ok := true; ok; r, ok = <-work {
					answer(r)
				}
			})
			return true
		}
		select {
		case work <- r:
			return true
		case <-stop:
		case <-ctx.Done():
		}
		return false
	}
	recvErr := make(chan error, 1)
	go func() {
		for {
			r, err := st.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			if !take(r) {
				return
			}
		}
	}()
	// finish waits for the requests taken and ends the stream with err,
	// or with the error that stopped the answers.
	finish := func(err error) error {
		close(stop)
		takeMu.Lock()
		stopped = true
		close(work)
		takeMu.Unlock()
		wg.Wait()
		if sendErr != nil {
			return sendErr
		}
		return err
	}
	select {
	case err := <-recvErr:
		if err == io.EOF {
			err = nil
		}
		return finish(err)
	case <-g.s.drained:
		return finish(status.Error(codes.Unavailable, "the server is draining: the requests of this stream read so far are answered; send the others to another replica"))
	case <-ctx.Done():
		return finish(status.FromContextError(ctx.Err()).Err())
	}
}

// streamAnswer is a stream's answer to one request, and the engine
// response it views.
func (g *grpcService) streamAnswer(ctx context.Context, r *oippb.ModelInferRequest) (*oippb.ModelStreamInferResponse, vm.Response) {
	out, resp, err := g.infer(ctx, r, "grpc_stream")
	if err != nil {
		return &oippb.ModelStreamInferResponse{
			ErrorMessage:  status.Convert(err).Message(),
			InferResponse: &oippb.ModelInferResponse{ModelName: r.ModelName, ModelVersion: r.ModelVersion, Id: r.Id},
		}, resp
	}
	return &oippb.ModelStreamInferResponse{InferResponse: out}, resp
}

func decodeGRPC(md *Model, r *oippb.ModelInferRequest) (vm.Request, callParams, error) {
	req := vm.Request{ID: r.Id, Inputs: make(map[string]*backend.Tensor, len(r.Inputs))}
	raw := r.RawInputContents
	if len(raw) > 0 && len(raw) != len(r.Inputs) {
		return req, callParams{}, inputErr("raw_input_contents holds %d entries for %d inputs: give one per input, or none", len(raw), len(r.Inputs))
	}
	for i, in := range r.Inputs {
		if in.Datatype == "BYTES" {
			if err := md.checkBytes(in.Name, in.Shape, in.Parameters[itemsParam] != nil); err != nil {
				return req, callParams{}, err
			}
			if req.Inputs[in.Name] != nil || req.Items[in.Name] != nil {
				return req, callParams{}, inputErr("input `%s` is given twice", in.Name)
			}
			var bs [][]byte
			if len(raw) > 0 {
				var err error
				if bs, err = splitBytes(in.Name, raw[i], in.Shape[0]); err != nil {
					return req, callParams{}, err
				}
			} else {
				bs = in.GetContents().GetBytesContents()
				if int64(len(bs)) != in.Shape[0] {
					return req, callParams{}, inputErr("BYTES input `%s` has shape %v but its bytes_contents hold %d elements", in.Name, in.Shape, len(bs))
				}
			}
			if err := md.addBytes(&req, in.Name, bs); err != nil {
				return req, callParams{}, err
			}
			continue
		}
		dt, err := md.checkInput(in.Name, in.Datatype)
		if err != nil {
			return req, callParams{}, err
		}
		if req.Inputs[in.Name] != nil || req.Items[in.Name] != nil {
			return req, callParams{}, inputErr("input `%s` is given twice", in.Name)
		}
		var t *backend.Tensor
		if len(raw) > 0 {
			if in.Contents != nil {
				return req, callParams{}, inputErr("input `%s` has contents while raw_input_contents is given: use one or the other", in.Name)
			}
			t, err = fromBytes(in.Name, dt, in.Shape, raw[i])
		} else {
			t, err = fromContents(in.Name, dt, in.Shape, in.Contents)
		}
		if err != nil {
			return req, callParams{}, err
		}
		if p := in.Parameters[itemsParam]; p != nil {
			if err := addItems(&req.Items, in.Name, t, paramValue(p)); err != nil {
				return req, callParams{}, err
			}
			continue
		}
		req.Inputs[in.Name] = t
	}
	if err := md.checkAsked(asked(r)); err != nil {
		return req, callParams{}, err
	}
	var timeout, priority any
	if p := r.Parameters["timeout"]; p != nil {
		timeout = paramValue(p)
	}
	if p := r.Parameters["priority"]; p != nil {
		priority = paramValue(p)
	}
	cp, err := readCallParams(timeout, priority)
	return req, cp, err
}

// asked is the names of the outputs r asks for, in its order.
func asked(r *oippb.ModelInferRequest) []string {
	names := make([]string, len(r.Outputs))
	for i, o := range r.Outputs {
		names[i] = o.Name
	}
	return names
}
