package serve

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// TestHealthWhileLoading: a server opened and not yet started answers live
// and not ready, over HTTP and grpc.health.v1; once started, ready, with
// each model SERVING; draining turns them NOT_SERVING. Server reflection
// lists the services.
func TestHealthWhileLoading(t *testing.T) {
	s, err := Open(Config{Repo: repo(t, "image_padded"), Defaults: ModelConfig{Workers: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	conn := grpcConn(t, s)
	hc := healthpb.NewHealthClient(conn)
	status := func(path string) int { return statusOf(t, ts.URL+path) }
	serving := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("health of %q: %v", service, err)
		}
		return r.Status
	}
	if l, r := status("/v2/health/live"), status("/v2/health/ready"); l != 200 || r != 503 {
		t.Errorf("before the models are loaded: live %d, ready %d; want 200 and 503", l, r)
	}
	if st := serving(""); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("gRPC health before the models are loaded: %v", st)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if l, r := status("/v2/health/live"), status("/v2/health/ready"); l != 200 || r != 200 {
		t.Errorf("started: live %d, ready %d; want 200 and 200", l, r)
	}
	for _, service := range []string{"", "image_padded"} {
		if st := serving(service); st != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("gRPC health of %q once started: %v", service, st)
		}
	}

	stream, err := reflectpb.NewServerReflectionClient(conn).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	for _, sv := range r.GetListServicesResponse().GetService() {
		services = append(services, sv.Name)
	}
	for _, want := range []string{"inference.GRPCInferenceService", "grpc.health.v1.Health"} {
		if !slices.Contains(services, want) {
			t.Errorf("reflection lists %v, without %s", services, want)
		}
	}

	s.SetDraining()
	if st := serving(""); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("gRPC health while draining: %v", st)
	}
	if r := status("/v2/health/ready"); r != 503 {
		t.Errorf("ready while draining: %d", r)
	}
}

// TestMetricsScrape: /metrics, scraped after good and refused requests,
// is promlint clean (but for Triton's own names), holds the process and Go runtime collectors, and with
// MetricsNames "triton" Triton's nv_inference_* metrics with the counts
// the requests make (and without it, none).
func TestMetricsScrape(t *testing.T) {
	for _, names := range []string{"genaic", "triton"} {
		t.Run(names, func(t *testing.T) {
			s := newServer(t, Config{Repo: repo(t, "image_padded"), MetricsNames: names, MaxRequestBytes: 1 << 16})
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			url := ts.URL + "/v2/models/image_padded/infer"
			reqs, err := readRequests(s.model("image_padded").Dir)
			if err != nil {
				t.Fatal(err)
			}
			const good, bad = 3, 2
			for i := range good {
				body, _ := oipJSON(t, reqs[i%len(reqs)], nil, false)
				if a := post(ts.Client(), url, body, 0); a.status != 200 {
					t.Fatalf("a good request: %d %v %s", a.status, a.err, a.message)
				}
			}
			for range bad {
				if a := post(ts.Client(), url, []byte(`{"inputs":[{"name":"nope","shape":[1],"datatype":"FP32","data":[1]}]}`), 0); a.status != 400 {
					t.Fatalf("a bad request: %d", a.status)
				}
			}
			if a := post(ts.Client(), url, make([]byte, 1<<17), 0); a.status != 413 {
				t.Fatalf("an oversized request: %d", a.status)
			}
			text := scrape(t, ts.URL)
			problems, err := promlint.New(strings.NewReader(text)).Lint()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				// Triton's names are kept as Triton has them (counters
				// without _total, microseconds), for its dashboards.
				if !strings.HasPrefix(p.Metric, "nv_inference_") {
					t.Errorf("promlint: %s: %s", p.Metric, p.Text)
				}
			}
			for _, name := range []string{"process_resident_memory_bytes", "process_open_fds", "go_goroutines", "go_memstats_heap_alloc_bytes", "genaic_budget_limit", "genaic_refused_bodies_total"} {
				if !strings.Contains(text, "\n"+name) {
					t.Errorf("/metrics has no %s", name)
				}
			}
			if names == "genaic" {
				if strings.Contains(text, "nv_inference_") {
					t.Errorf("/metrics has Triton's names without MetricsNames triton")
				}
				return
			}
			stat := s.model("image_padded").modelStat()
			for sample, want := range map[string]float64{
				"nv_inference_request_success":           good,
				"nv_inference_request_failure":           bad,
				"nv_inference_count":                     good,
				"nv_inference_exec_count":                float64(stat.ExecutionCount),
				"nv_inference_pending_request_count":     0,
				"nv_inference_request_duration_us":       float64(stat.InferenceStats.Success.NS / 1000),
				"nv_inference_queue_duration_us":         float64(stat.InferenceStats.Queue.NS / 1000),
				"nv_inference_compute_infer_duration_us": float64(stat.InferenceStats.ComputeInfer.NS / 1000),
			} {
				if got := metric(t, text, sample+`{model="image_padded",version="1"}`); got != want {
					t.Errorf("%s = %v, want %v", sample, got, want)
				}
			}
			if stat.ExecutionCount == 0 || stat.InferenceStats.Success.NS == 0 || stat.InferenceStats.ComputeInfer.NS == 0 {
				t.Errorf("the statistics count no executions or durations: %+v", stat)
			}
		})
	}
}
