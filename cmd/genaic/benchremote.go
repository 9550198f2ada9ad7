package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/genaic/genaic/serve"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// A bench against a server: with --url (HTTP/REST) or --grpc, the modes
// are the ways a client reaches an Open Inference Protocol server (genaic
// serve, or any other that speaks it) instead of engines in the process:
//
//	http         binary tensors both ways (the binary tensor extension)
//	http_json    JSON numbers both ways
//	grpc         unary ModelInfer calls on one connection
//	grpc_stream  ModelStreamInfer: the clients' requests on one stream
//
// The requests are encoded once, before the rounds (serve.EncodeHTTP,
// serve.EncodeGRPC, the latter to its wire bytes: benchwire.go); a round
// measures sending them and reading the answers. Where --url names a genaic server, its /metrics tell each
// round's groups (invocations and requests per component) and the
// server's own mean times (per request; per component the wait for a
// group and the invocation); another server that answers Triton's
// statistics extension (/v2/models/{m}/stats, or ModelStatistics where
// only --grpc is given) tells the same of the model as a whole, its batch
// sizes too. Both count every client's traffic, not only the bench's.

// remoteFlags are bench's options for a server.
type remoteFlags struct {
	url, grpc, model, protocols string
	timeout                     time.Duration
	priority                    int
}

func (rf *remoteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&rf.url, "url", "", "load a server instead of engines in this process: its HTTP/REST address, such as http://localhost:8000 (modes http, http_json)")
	fs.StringVar(&rf.grpc, "grpc", "", "load a server's gRPC address, such as localhost:8001 (modes grpc, grpc_stream)")
	fs.StringVar(&rf.model, "model", "", "the model's name on the server (default: the package's folder name, as genaic serve names it)")
	fs.StringVar(&rf.protocols, "protocols", "", "with --url or --grpc, the modes to run, such as http,grpc_stream (default: every mode of the addresses given)")
	fs.DurationVar(&rf.timeout, "timeout", time.Minute, "with --url or --grpc, how long a request may take before it counts as failed")
	fs.IntVar(&rf.priority, "priority", 0, fmt.Sprintf("with --url or --grpc, the priority every request names, from 1 (the most urgent) to %d; 0: none (the model's default_priority)", serve.MaxPriority))
}

// params are the parameters every request names: its priority, where set.
func (rf *remoteFlags) params() map[string]any {
	if rf.priority == 0 {
		return nil
	}
	return map[string]any{"priority": rf.priority}
}

func (rf *remoteFlags) remote() bool { return rf.url != "" || rf.grpc != "" }

// baseURL is --url with its scheme: host:port as perf_analyzer takes it
// means http://host:port.
func (rf *remoteFlags) baseURL() string {
	u := strings.TrimSuffix(rf.url, "/")
	if u != "" && !strings.Contains(u, "://") {
		u = "http://" + u
	}
	return u
}

// remoteModes are the modes of a bench against a server.
var remoteModes = []benchMode{
	{name: "http", remote: func(b *bencher) (target, error) { return newHTTPTarget(b, true) }},
	{name: "http_json", remote: func(b *bencher) (target, error) { return newHTTPTarget(b, false) }},
	{name: "grpc", remote: func(b *bencher) (target, error) { return newGRPCTarget(b, false) }},
	{name: "grpc_stream", remote: func(b *bencher) (target, error) { return newGRPCTarget(b, true) }},
}

// modes returns the modes --protocols selects, or every mode of the
// addresses given, saying what is wrong.
func (rf *remoteFlags) modes() ([]benchMode, error) {
	var names []string
	if rf.protocols != "" {
		names = strings.Split(rf.protocols, ",")
	} else {
		if rf.url != "" {
			names = append(names, "http", "http_json")
		}
		if rf.grpc != "" {
			names = append(names, "grpc", "grpc_stream")
		}
	}
	var out []benchMode
	for _, n := range names {
		n = strings.TrimSpace(n)
		i := -1
		for j, m := range remoteModes {
			if m.name == n {
				i = j
			}
		}
		switch {
		case i < 0:
			return nil, fmt.Errorf("--protocols %s: %q is none of http, http_json, grpc, grpc_stream", rf.protocols, n)
		case strings.HasPrefix(n, "http") && rf.url == "":
			return nil, fmt.Errorf("--protocols %s: %s needs --url", rf.protocols, n)
		case strings.HasPrefix(n, "grpc") && rf.grpc == "":
			return nil, fmt.Errorf("--protocols %s: %s needs --grpc", rf.protocols, n)
		}
		out = append(out, remoteModes[i])
	}
	return out, nil
}

// maxLevel is the most clients any level runs: the connections a client
// keeps open to the server.
func (b *bencher) maxLevel() int {
	m := 1
	for _, c := range b.flags.levels {
		m = max(m, c)
	}
	return m
}

// httpTarget posts the requests to a server's infer endpoint.
type httpTarget struct {
	client  *http.Client // for readiness and metrics
	url     string
	metrics *metricsReader
	conns   *postConns // for the requests (benchhttp.go)
	posts   [][]byte   // each request's POST, built once
	ids     []string
}

func newHTTPTarget(b *bencher, binary bool) (target, error) {
	rf := b.flags.remoteFlags
	t := &httpTarget{
		client: &http.Client{Timeout: rf.timeout},
		url:    rf.baseURL() + "/v2/models/" + rf.model,
		posts:  make([][]byte, len(b.reqs)), ids: make([]string, len(b.reqs)),
	}
	t.metrics = newMetricsReader(t.client, rf.baseURL(), rf.model)
	if err := t.ready(); err != nil {
		return nil, err
	}
	infer, err := url.Parse(t.url + "/infer")
	if err != nil {
		return nil, fmt.Errorf("--url: %v", err)
	}
	if t.conns, err = newPostConns(rf.baseURL(), b.maxLevel(), rf.timeout); err != nil {
		return nil, fmt.Errorf("--url: %v", err)
	}
	for i, r := range b.reqs {
		body, hlen, err := serve.EncodeHTTPWith(r, binary, rf.params())
		if err != nil {
			return nil, err
		}
		headers := []string{"Content-Type", "application/json"}
		if hlen > 0 {
			headers = append(headers, serve.HeaderLength, strconv.Itoa(hlen))
		}
		t.posts[i], t.ids[i] = postRequest(infer.Host, infer.RequestURI(), body, headers...), r.ID
	}
	return t, nil
}

// ready checks that the server serves the model and is ready.
func (t *httpTarget) ready() error {
	resp, err := t.client.Get(t.url + "/ready")
	if err != nil {
		return fmt.Errorf("--url: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("--url: %s/ready answers %s: %s", t.url, resp.Status, errorText(resp.Body))
	}
	io.Copy(io.Discard, resp.Body)
	return nil
}

func (t *httpTarget) run(i int) error {
	status, body, err := t.conns.post(t.posts[i])
	switch {
	case err != nil:
		return fmt.Errorf("request %s: %v", t.ids[i], err)
	case status != http.StatusOK:
		return fmt.Errorf("request %s: %s: %s", t.ids[i], strings.TrimSpace(strconv.Itoa(status)+" "+http.StatusText(status)), errorText(bytes.NewReader(body)))
	}
	return nil
}

func (t *httpTarget) snapshot() snapshot { return t.metrics.read() }
func (t *httpTarget) close() {
	t.conns.close()
	t.client.CloseIdleConnections()
}

// errorText is an error answer's message: the protocol's {"error": ...},
// or the start of whatever the body holds.
func errorText(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(b))
}

// grpcTarget sends the requests over one gRPC connection: unary calls, or
// one ModelStreamInfer stream that every client's requests share.
type grpcTarget struct {
	conn    *grpc.ClientConn
	client  oippb.GRPCInferenceServiceClient
	timeout time.Duration
	msgs    []*wireRequest // encoded once (benchwire.go)
	ids     []string
	metrics *metricsReader
	stream  *sharedStream // for grpc_stream
}

func newGRPCTarget(b *bencher, stream bool) (target, error) {
	rf := b.flags.remoteFlags
	conn, err := grpc.NewClient(rf.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30), grpc.ForceCodecV2(newWireCodec())))
	if err != nil {
		return nil, fmt.Errorf("--grpc: %v", err)
	}
	t := &grpcTarget{conn: conn, client: oippb.NewGRPCInferenceServiceClient(conn), timeout: rf.timeout,
		msgs: make([]*wireRequest, len(b.reqs)), ids: make([]string, len(b.reqs))}
	if rf.url != "" {
		t.metrics = newMetricsReader(&http.Client{Timeout: rf.timeout}, rf.baseURL(), rf.model)
	} else {
		t.metrics = &metricsReader{grpc: t.client, timeout: rf.timeout, model: rf.model}
	}
	ctx, cancel := context.WithTimeout(context.Background(), rf.timeout)
	defer cancel()
	if r, err := t.client.ModelReady(ctx, &oippb.ModelReadyRequest{Name: rf.model}); err != nil || !r.Ready {
		conn.Close()
		if err == nil {
			err = errors.New("not ready")
		}
		return nil, fmt.Errorf("--grpc %s: model %s: %v", rf.grpc, rf.model, err)
	}
	for i, r := range b.reqs {
		m, err := serve.EncodeGRPC(rf.model, r)
		if err == nil && rf.priority != 0 {
			m.Parameters = map[string]*oippb.InferParameter{"priority": {ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: int64(rf.priority)}}}
		}
		if err == nil {
			t.msgs[i], err = newWireRequest(m)
		}
		if err != nil {
			conn.Close()
			return nil, err
		}
		t.msgs[i] = t.msgs[i].withID(r.ID)
		t.ids[i] = r.ID
	}
	if stream {
		t.stream = &sharedStream{conn: conn, waiting: map[string]chan *streamAnswer{}}
	}
	return t, nil
}

func (t *grpcTarget) run(i int) error {
	if t.stream != nil {
		return t.stream.run(t.msgs[i], t.ids[i], t.timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	if err := t.conn.Invoke(ctx, oippb.GRPCInferenceService_ModelInfer_FullMethodName, t.msgs[i], &unaryAnswer{}); err != nil {
		s := status.Convert(err)
		return fmt.Errorf("request %s: %s: %s", t.ids[i], s.Code(), s.Message())
	}
	return nil
}

func (t *grpcTarget) snapshot() snapshot { return t.metrics.read() }

func (t *grpcTarget) close() {
	if t.stream != nil {
		t.stream.close()
	}
	t.conn.Close()
}

// sharedStream is one ModelStreamInfer stream that many clients send
// on, each waiting for its own answer: answers come as requests finish,
// and a reader hands each to its sender by a stream-wide unique id. A
// stream that breaks fails the requests waiting on it, and the next send
// opens another.
type sharedStream struct {
	conn   *grpc.ClientConn
	mu     sync.Mutex // guards everything below, and SendMsg
	st     grpc.ClientStream
	cancel context.CancelFunc
	// waiting maps the id of each request sent and not yet answered to
	// its sender's channel.
	waiting map[string]chan *streamAnswer
	next    uint64
}

func (s *sharedStream) run(m *wireRequest, id string, timeout time.Duration) error {
	ch := make(chan *streamAnswer, 1)
	s.mu.Lock()
	if s.st == nil {
		if err := s.open(); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("request %s: %v", id, err)
		}
	}
	s.next++
	key := strconv.FormatUint(s.next, 10)
	s.waiting[key] = ch
	// A stream-wide id in place of the document's tells the answers
	// apart.
	if err := s.st.SendMsg(m.withID(key)); err != nil {
		delete(s.waiting, key)
		s.mu.Unlock()
		return fmt.Errorf("request %s: sending on the stream: %v", id, err)
	}
	s.mu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-ch:
		switch {
		case a == nil:
			return fmt.Errorf("request %s: the stream ended before its answer", id)
		case a.errorMessage != "":
			return fmt.Errorf("request %s: %s", id, a.errorMessage)
		}
		return nil
	case <-timer.C:
		s.mu.Lock()
		delete(s.waiting, key)
		s.mu.Unlock()
		return fmt.Errorf("request %s: no answer on the stream within %v", id, timeout)
	}
}

// open starts a stream and its reader (under s.mu).
func (s *sharedStream) open() error {
	ctx, cancel := context.WithCancel(context.Background())
	st, err := s.conn.NewStream(ctx, &oippb.GRPCInferenceService_ServiceDesc.Streams[0], oippb.GRPCInferenceService_ModelStreamInfer_FullMethodName)
	if err != nil {
		cancel()
		return err
	}
	s.st, s.cancel = st, cancel
	go s.read(st)
	return nil
}

// read hands each answer of st to its sender; when st ends, it fails the
// requests still waiting (a nil answer) and lets the next send open a
// new stream.
func (s *sharedStream) read(st grpc.ClientStream) {
	for {
		a := new(streamAnswer)
		err := st.RecvMsg(a)
		s.mu.Lock()
		if err != nil {
			if s.st == st {
				for key, ch := range s.waiting {
					ch <- nil
					delete(s.waiting, key)
				}
				s.st = nil
				s.cancel()
			}
			s.mu.Unlock()
			return
		}
		key := a.id
		ch := s.waiting[key]
		delete(s.waiting, key)
		s.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

func (s *sharedStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st != nil {
		s.st.CloseSend()
		s.cancel()
		s.st = nil
	}
}

// metricsReader reads a server's counters and times of one model: a
// genaic server's from its /metrics, another's from Triton's statistics
// extension, over HTTP, or over gRPC where the bench has no --url. A
// round's groups and times are the difference of two reads. Nil, or a
// server with neither, reads empty stats and no times.
type metricsReader struct {
	client     *http.Client // nil: statistics over grpc
	url, stats string
	grpc       oippb.GRPCInferenceServiceClient
	timeout    time.Duration
	model      string
	// source is what the first successful read came from ("metrics" or
	// "stats"); later reads keep to it, so that a round's two snapshots
	// never come from different sources after a failed read.
	source string
}

func newMetricsReader(c *http.Client, base, model string) *metricsReader {
	return &metricsReader{client: c, url: base + "/metrics", stats: base + "/v2/models/" + url.PathEscape(model) + "/stats", model: model}
}

// serverTimes are a genaic server's sums and counts of its own times: its
// requests', decoded to answered (genaic_request_duration_seconds), and
// per component its items' waits for a group (genaic_queue_wait_seconds)
// and its invocations (genaic_invocation_seconds); and its process's CPU
// time (process_cpu_seconds_total) over its requests' count, where its
// metrics have it.
type serverTimes struct {
	request       sumCount
	queue, invoke map[string]sumCount
	cpu           sumCount
}

// sumCount is a histogram's sum (seconds) and count.
type sumCount struct{ sum, count float64 }

func (a sumCount) minus(b sumCount) sumCount { return sumCount{a.sum - b.sum, a.count - b.count} }
func (a sumCount) plus(b sumCount) sumCount  { return sumCount{a.sum + b.sum, a.count + b.count} }

// meanMS is the mean in milliseconds, 0 for no observation.
func (a sumCount) meanMS() float64 {
	if a.count <= 0 {
		return 0
	}
	return a.sum / a.count * 1e3
}

// minus is what the times grew by since b.
func (a serverTimes) minus(b serverTimes) serverTimes {
	out := serverTimes{request: a.request.minus(b.request), queue: map[string]sumCount{}, invoke: map[string]sumCount{}, cpu: a.cpu.minus(b.cpu)}
	for c, v := range a.queue {
		out.queue[c] = v.minus(b.queue[c])
	}
	for c, v := range a.invoke {
		out.invoke[c] = v.minus(b.invoke[c])
	}
	return out
}

// add adds b's times to a's.
func (a *serverTimes) add(b serverTimes) {
	if a.queue == nil {
		a.queue, a.invoke = map[string]sumCount{}, map[string]sumCount{}
	}
	a.request, a.cpu = a.request.plus(b.request), a.cpu.plus(b.cpu)
	for c, v := range b.queue {
		a.queue[c] = a.queue[c].plus(v)
	}
	for c, v := range b.invoke {
		a.invoke[c] = a.invoke[c].plus(v)
	}
}

// componentSeries are the counters a round's groups are read from.
var componentSeries = map[string]func(cs *vm.ComponentStats, v float64){
	"genaic_component_invocations_total": func(cs *vm.ComponentStats, v float64) { cs.Invocations = int64(v) },
	"genaic_component_requests_total":    func(cs *vm.ComponentStats, v float64) { cs.Requests = int64(v) },
	"genaic_padding_overhead_ratio":      func(cs *vm.ComponentStats, v float64) { cs.PaddingOverhead = v },
}

func (m *metricsReader) read() snapshot {
	switch {
	case m == nil:
		return snapshot{stats: vm.Stats{Components: map[string]vm.ComponentStats{}}}
	case m.client == nil:
		return m.readGRPCStats()
	}
	if m.source != "stats" {
		out, ok := m.readMetrics()
		if ok {
			m.source = "metrics"
		}
		if ok || m.source == "metrics" {
			return out
		}
	}
	out := m.readStats()
	if out.server != nil {
		m.source = "stats"
	}
	return out
}

// readMetrics reads a genaic server's /metrics; false where the server
// has none.
func (m *metricsReader) readMetrics() (snapshot, bool) {
	out := snapshot{stats: vm.Stats{Components: map[string]vm.ComponentStats{}}}
	resp, err := m.client.Get(m.url)
	if err != nil {
		return out, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, false
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil || families["genaic_model_ready"] == nil {
		return out, false // not a genaic server's metrics (it sets this gauge from the start)
	}
	// each calls f with every series of the model in a family, and its
	// component (empty for a series of the model's).
	each := func(family string, f func(component string, metric *dto.Metric)) {
		for _, metric := range families[family].GetMetric() {
			var mdl, component string
			for _, l := range metric.GetLabel() {
				switch l.GetName() {
				case "model":
					mdl = l.GetValue()
				case "component":
					component = l.GetValue()
				}
			}
			if mdl == m.model {
				f(component, metric)
			}
		}
	}
	for name, set := range componentSeries {
		each(name, func(component string, metric *dto.Metric) {
			if component == "" {
				return
			}
			cs := out.stats.Components[component]
			set(&cs, metric.GetCounter().GetValue()+metric.GetGauge().GetValue())
			out.stats.Components[component] = cs
		})
	}
	times := serverTimes{queue: map[string]sumCount{}, invoke: map[string]sumCount{}}
	histogram := func(metric *dto.Metric) sumCount {
		h := metric.GetHistogram()
		return sumCount{h.GetSampleSum(), float64(h.GetSampleCount())}
	}
	each("genaic_request_duration_seconds", func(_ string, metric *dto.Metric) { times.request = histogram(metric) })
	each("genaic_queue_wait_seconds", func(c string, metric *dto.Metric) { times.queue[c] = histogram(metric) })
	each("genaic_invocation_seconds", func(c string, metric *dto.Metric) { times.invoke[c] = histogram(metric) })
	if cpu := families["process_cpu_seconds_total"].GetMetric(); len(cpu) == 1 {
		times.cpu = sumCount{cpu[0].GetCounter().GetValue(), times.request.count}
	}
	out.server = &times
	return out, true
}

// tritonDuration is Triton's $duration_stat.
type tritonDuration struct {
	Count uint64 `json:"count"`
	NS    uint64 `json:"ns"`
}

func (d tritonDuration) sumCount() sumCount { return sumCount{float64(d.NS) / 1e9, float64(d.Count)} }

// modelStatistics is what the bench reads of a model's statistics in
// Triton's schema (its statistics extension), as perf_analyzer does.
type modelStatistics struct {
	Name           string `json:"name"`
	ExecutionCount uint64 `json:"execution_count"`
	InferenceStats struct {
		Success tritonDuration `json:"success"`
		Queue   tritonDuration `json:"queue"`
	} `json:"inference_stats"`
	BatchStats []batchStatistics `json:"batch_stats"`
}

type batchStatistics struct {
	BatchSize    int            `json:"batch_size"`
	ComputeInfer tritonDuration `json:"compute_infer"`
}

// snapshot is the model as the one component of the groups: its
// executions are the invocations, its batch sizes the group sizes, its
// successes the requests' server times, its queue the waits and its
// batches' compute_infer the invocations' times.
func (ms modelStatistics) snapshot() snapshot {
	cs := vm.ComponentStats{Invocations: int64(ms.ExecutionCount), GroupSizes: map[int]int64{}}
	var invoke sumCount
	for _, b := range ms.BatchStats {
		cs.GroupSizes[b.BatchSize] += int64(b.ComputeInfer.Count)
		cs.Requests += int64(b.BatchSize) * int64(b.ComputeInfer.Count)
		invoke = invoke.plus(b.ComputeInfer.sumCount())
	}
	return snapshot{
		stats: vm.Stats{Components: map[string]vm.ComponentStats{ms.Name: cs}},
		server: &serverTimes{
			request: ms.InferenceStats.Success.sumCount(),
			queue:   map[string]sumCount{ms.Name: ms.InferenceStats.Queue.sumCount()},
			invoke:  map[string]sumCount{ms.Name: invoke},
		},
	}
}

// readStats reads the model's statistics over HTTP. A server without the
// extension reads empty stats and no times.
func (m *metricsReader) readStats() snapshot {
	out := snapshot{stats: vm.Stats{Components: map[string]vm.ComponentStats{}}}
	resp, err := m.client.Get(m.stats)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	var body struct {
		ModelStats []modelStatistics `json:"model_stats"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body) != nil {
		return out
	}
	for _, ms := range body.ModelStats {
		if ms.Name == m.model {
			return ms.snapshot()
		}
	}
	return out
}

// readGRPCStats reads the model's statistics over gRPC (ModelStatistics).
func (m *metricsReader) readGRPCStats() snapshot {
	out := snapshot{stats: vm.Stats{Components: map[string]vm.ComponentStats{}}}
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	resp, err := m.grpc.ModelStatistics(ctx, &oippb.ModelStatisticsRequest{Name: m.model})
	if err != nil {
		return out
	}
	duration := func(d *oippb.StatisticDuration) tritonDuration {
		return tritonDuration{Count: d.GetCount(), NS: d.GetNs()}
	}
	for _, p := range resp.ModelStats {
		if p.Name != m.model {
			continue
		}
		ms := modelStatistics{Name: p.Name, ExecutionCount: p.ExecutionCount}
		ms.InferenceStats.Success = duration(p.GetInferenceStats().GetSuccess())
		ms.InferenceStats.Queue = duration(p.GetInferenceStats().GetQueue())
		for _, b := range p.BatchStats {
			ms.BatchStats = append(ms.BatchStats, batchStatistics{BatchSize: int(b.BatchSize), ComputeInfer: duration(b.GetComputeInfer())})
		}
		return ms.snapshot()
	}
	return out
}
