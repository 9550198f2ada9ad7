package serve

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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

// NewGRPCServer returns a gRPC server with the inference service
// registered, taking messages up to the server's request size limit.
func (s *Server) NewGRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	opts = append([]grpc.ServerOption{grpc.MaxRecvMsgSize(int(s.cfg.MaxRequestBytes)), grpc.MaxSendMsgSize(1 << 30)}, opts...)
	g := grpc.NewServer(opts...)
	oippb.RegisterGRPCInferenceServiceServer(g, &grpcService{s: s})
	return g
}

func (g *grpcService) ServerLive(context.Context, *oippb.ServerLiveRequest) (*oippb.ServerLiveResponse, error) {
	return &oippb.ServerLiveResponse{Live: true}, nil
}

func (g *grpcService) ServerReady(context.Context, *oippb.ServerReadyRequest) (*oippb.ServerReadyResponse, error) {
	return &oippb.ServerReadyResponse{Ready: g.s.Ready()}, nil
}

func (g *grpcService) model(name, version string) (*Model, error) {
	md := g.s.models[name]
	if md == nil {
		return nil, status.Errorf(codes.NotFound, "no model %q: this server serves %s", name, keys(g.s.models))
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
	return &oippb.ServerMetadataResponse{Name: "genaic", Version: Version}, nil
}

func (g *grpcService) ModelMetadata(_ context.Context, r *oippb.ModelMetadataRequest) (*oippb.ModelMetadataResponse, error) {
	md, err := g.model(r.Name, r.Version)
	if err != nil {
		return nil, err
	}
	conv := func(ts []tensorMeta) []*oippb.ModelMetadataResponse_TensorMetadata {
		var out []*oippb.ModelMetadataResponse_TensorMetadata
		for _, t := range ts {
			out = append(out, &oippb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
		}
		return out
	}
	return &oippb.ModelMetadataResponse{Name: md.Name, Versions: []string{Version}, Platform: "genaic", Inputs: conv(md.inputs), Outputs: conv(md.outputs)}, nil
}

// grpcError is the status of a failed request: the rule's code, and the
// RunError's text (which names the rule) as message.
func grpcError(err error) error {
	re := asRun(err)
	return status.Error(grpcCode(re.Rule), re.Error())
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
	md, err := g.model(r.ModelName, r.ModelVersion)
	if err != nil {
		return nil, err
	}
	req, timeout, err := decodeGRPC(md, r)
	if err != nil {
		g.s.m.requests.WithLabelValues(md.Name, "grpc").Inc()
		g.s.m.errors.WithLabelValues(md.Name, asRun(err).Rule).Inc()
		return nil, grpcError(err)
	}
	resp := g.s.infer(ctx, md, "grpc", req, timeout)
	if resp.Err != nil {
		return nil, grpcError(resp.Err)
	}
	var asked []string
	for _, o := range r.Outputs {
		asked = append(asked, o.Name)
	}
	names, err := md.outputOrder(resp, asked)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &oippb.ModelInferResponse{ModelName: md.Name, ModelVersion: Version, Id: r.Id}
	for _, n := range names {
		t, extents, err := output(resp, n)
		if err != nil {
			return nil, grpcError(err)
		}
		ot := &oippb.ModelInferResponse_InferOutputTensor{Name: n, Datatype: Datatype(t.DType), Shape: t.Shape}
		if extents != nil {
			ot.Parameters = map[string]*oippb.InferParameter{itemsParam: {ParameterChoice: &oippb.InferParameter_StringParam{StringParam: extentsString(extents)}}}
		}
		out.Outputs = append(out.Outputs, ot)
		out.RawOutputContents = append(out.RawOutputContents, toBytes(t))
	}
	return out, nil
}

func decodeGRPC(md *Model, r *oippb.ModelInferRequest) (vm.Request, time.Duration, error) {
	req := vm.Request{ID: r.Id, Inputs: map[string]*backend.Tensor{}}
	raw := r.RawInputContents
	if len(raw) > 0 && len(raw) != len(r.Inputs) {
		return req, 0, inputErr("raw_input_contents holds %d entries for %d inputs: give one per input, or none", len(raw), len(r.Inputs))
	}
	for i, in := range r.Inputs {
		if in.Datatype == "BYTES" {
			if err := md.checkBytes(in.Name, in.Shape); err != nil {
				return req, 0, err
			}
			if req.Inputs[in.Name] != nil || req.Items[in.Name] != nil {
				return req, 0, inputErr("input `%s` is given twice", in.Name)
			}
			var bs [][]byte
			if len(raw) > 0 {
				var err error
				if bs, err = splitBytes(in.Name, raw[i], in.Shape[0]); err != nil {
					return req, 0, err
				}
			} else {
				bs = in.GetContents().GetBytesContents()
				if int64(len(bs)) != in.Shape[0] {
					return req, 0, inputErr("BYTES input `%s` has shape %v but its bytes_contents hold %d elements", in.Name, in.Shape, len(bs))
				}
			}
			if err := md.addBytes(&req, in.Name, bs); err != nil {
				return req, 0, err
			}
			continue
		}
		dt, err := md.checkInput(in.Name, in.Datatype)
		if err != nil {
			return req, 0, err
		}
		if req.Inputs[in.Name] != nil || req.Items[in.Name] != nil {
			return req, 0, inputErr("input `%s` is given twice", in.Name)
		}
		var t *backend.Tensor
		if len(raw) > 0 {
			if in.Contents != nil {
				return req, 0, inputErr("input `%s` has contents while raw_input_contents is given: use one or the other", in.Name)
			}
			t, err = fromBytes(in.Name, dt, in.Shape, raw[i])
		} else {
			t, err = fromContents(in.Name, dt, in.Shape, in.Contents)
		}
		if err != nil {
			return req, 0, err
		}
		if p := in.Parameters[itemsParam]; p != nil {
			if err := addItems(&req, in.Name, t, paramValue(p)); err != nil {
				return req, 0, err
			}
			continue
		}
		req.Inputs[in.Name] = t
	}
	var timeout time.Duration
	if p := r.Parameters["timeout"]; p != nil {
		var err error
		if timeout, err = parseTimeout(paramValue(p)); err != nil {
			return req, 0, err
		}
	}
	return req, timeout, nil
}
