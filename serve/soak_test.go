package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/genaic/genaic/serve/oippb"
)

// usage is what a soak watches return to its starting band.
type usage struct {
	rss        int64 // bytes
	heap       int64 // bytes live after a collection
	goroutines int
	fds        int
}

// measure reads the process's usage once freed memory has gone back to
// the system (what the runtime's scavenger does over minutes), so that RSS
// counts what is held, not the peak of the heap.
func measure(t *testing.T) usage {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc: the soak measures a Linux process")
	}
	u := usage{heap: int64(ms.HeapAlloc)}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			u.rss = kb << 10
		}
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	u.goroutines, u.fds = runtime.NumGoroutine(), len(fds)
	return u
}

func (u usage) String() string {
	return fmt.Sprintf("RSS %.1f MB (heap %.1f MB live), %d goroutines, %d fds", float64(u.rss)/(1<<20), float64(u.heap)/(1<<20), u.goroutines, u.fds)
}

// within says whether u is in the band around the starting usage:
// goroutines and fds at most 16 more, and RSS at most 1.5 × plus 64 MiB;
// under the race detector, whose own memory RSS counts and which keeps
// growing with the goroutines it has seen, the live heap at most 1.5 ×
// plus 16 MiB instead (make soak runs both ways).
func (u usage) within(start usage) bool {
	memory := u.rss <= start.rss*3/2+64<<20
	if raceDetector {
		memory = u.heap <= start.heap*3/2+16<<20
	}
	return memory && u.goroutines <= start.goroutines+16 && u.fds <= start.fds+16
}

// TestSoak runs mixed good and hostile HTTP and gRPC traffic against the
// server, with one model unloaded and loaded again all along, for
// GENAIC_SOAK (a duration; unset: skipped; `make soak` runs 10m under
// -race, then 10m without). Every request is answered once: the server's
// admitted and answered counts agree, every good request gets an answer
// (a model being reloaded answers 503/404 or UNAVAILABLE/NOT_FOUND), and
// every hostile one its refusal. Afterwards memory, goroutines and open
// fds return to the band of where they started (within).
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("GENAIC_SOAK"))
	if err != nil {
		t.Skip("GENAIC_SOAK (a duration) unset: the soak runs with `make soak`")
	}
	const timeout = 300 * time.Millisecond
	s := newServer(t, Config{Repo: copyRepo(t, "image_padded", "text_packed"), ModelControl: "explicit", MaxRequestBytes: 1 << 20,
		HeaderTimeout: timeout, BodyTimeout: timeout, IdleTimeout: time.Second, HandshakeTimeout: timeout})
	addr, _ := serveHTTP(t, s)
	conn := grpcConn(t, s)
	gc := oippb.NewGRPCInferenceServiceClient(conn)
	url := "http://" + addr + "/v2/models/"
	bodies := map[string][][]byte{}
	grpcReqs := map[string][]*oippb.ModelInferRequest{}
	for _, m := range []string{"image_padded", "text_packed"} {
		reqs, err := readRequests(s.model(m).Dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range reqs {
			b, _ := oipJSON(t, r, nil, false)
			bodies[m] = append(bodies[m], b)
			grpcReqs[m] = append(grpcReqs[m], grpcRequest(m, r, i%2 == 0, nil))
		}
	}
	client := &http.Client{Timeout: time.Minute}
	var (
		good, refused, reloading atomic.Int64
		failures                 []string
		mu                       sync.Mutex
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	// goodHTTP: 200, or the reloaded model's 503/404.
	goodHTTP := func(i int) {
		m := []string{"image_padded", "text_packed"}[i%2]
		a := post(client, url+m+"/infer", bodies[m][i%len(bodies[m])], 0)
		switch {
		case a.status == 200 && a.err == nil:
			good.Add(1)
		case m == "text_packed" && (a.status == 503 || a.status == 404):
			reloading.Add(1)
		default:
			fail("good HTTP request to %s: %d %v %s", m, a.status, a.err, a.message)
		}
	}
	goodGRPC := func(i int) {
		m := []string{"image_padded", "text_packed"}[i%2]
		_, err := gc.ModelInfer(context.Background(), grpcReqs[m][i%len(grpcReqs[m])])
		code := grpcstatus.Code(err)
		switch {
		case err == nil:
			good.Add(1)
		case m == "text_packed" && (code == codes.Unavailable || code == codes.NotFound):
			reloading.Add(1)
		default:
			fail("good gRPC request to %s: %v", m, err)
		}
	}
	raw := func(addr, send string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fail("dial: %v", err)
			return ""
		}
		defer c.Close()
		c.Write([]byte(send))
		c.SetReadDeadline(time.Now().Add(patience))
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			b.Write(buf[:n])
			if errors.Is(err, os.ErrDeadlineExceeded) {
				fail("a hostile connection still open after %v", patience)
			}
			if err != nil {
				return b.String()
			}
		}
	}
	infer := "POST /v2/models/image_padded/infer HTTP/1.1\r\nHost: genaic\r\n"
	repeated := `{"inputs":[],"outputs":[` + strings.Repeat(`{"name":"embeddings"},`, 10000) + `{"name":"embeddings"}]}`
	hostile := func(i int) {
		var want, got string
		switch i % 7 {
		case 0:
			want, got = "413", raw(addr, infer+"Content-Length: 100000000\r\n\r\n")
		case 1:
			want, got = "408", raw(addr, infer+"Content-Length: 100\r\n\r\n{") // never finished
		case 2:
			want, got = "", raw(addr, "POST /v2/health/live HTTP/1.1\r\n") // headers never finished
		case 3:
			want, got = "400", raw(addr, infer+fmt.Sprintf("Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(repeated), repeated))
		case 4:
			want, got = "400", raw(addr, infer+"Content-Length: 5\r\nConnection: close\r\n\r\n{{{{{")
		case 5:
			want, got = "", raw(conn.Target(), "") // no HTTP/2 preface
		case 6:
			// A client that gives up at once: its request may or may not be
			// admitted; either way it is answered once (the counts agree).
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			gc.ModelInfer(ctx, grpcReqs["image_padded"][0])
			cancel()
			refused.Add(1)
			return
		}
		// want "": the connection closed (raw fails one left open).
		if want != "" && !strings.HasPrefix(got, "HTTP/1.1 "+want) {
			fail("hostile case %d: answered %.60q, want %s", i%7, got, want)
			return
		}
		refused.Add(1)
	}

	run := func(until time.Time) {
		ctx, cancel := context.WithDeadline(context.Background(), until)
		defer cancel()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; ctx.Err() == nil; i += 8 {
					goodHTTP(i)
				}
			})
		}
		for w := range 4 {
			wg.Go(func() {
				for i := w; ctx.Err() == nil; i += 4 {
					goodGRPC(i)
				}
			})
		}
		for w := range 4 {
			wg.Go(func() {
				for i := w; ctx.Err() == nil; i += 4 {
					hostile(i)
				}
			})
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := s.UnloadModel("text_packed"); err != nil {
					fail("unload: %v", err)
				}
				if err := s.LoadModel("text_packed"); err != nil {
					fail("load: %v", err)
				}
				select { // serve it a while between reloads
				case <-ctx.Done():
				case <-time.After(250 * time.Millisecond):
				}
			}
		})
		wg.Wait()
	}
	// A first stretch warms everything up (pools, connections, the
	// runtime's heap) before the starting usage is measured.
	run(time.Now().Add(min(d/10, 5*time.Second)))
	start := measure(t)
	run(time.Now().Add(d))
	var end usage
	for deadline := time.Now().Add(patience); ; time.Sleep(100 * time.Millisecond) {
		if end = measure(t); end.within(start) || time.Now().After(deadline) {
			break
		}
	}
	admitted, answered := s.Counts()
	t.Logf("%v: %d good answers, %d answered by the model being reloaded, %d hostile refused; admitted %d, answered %d; start %v, end %v",
		d, good.Load(), reloading.Load(), refused.Load(), admitted, answered, start, end)
	for _, f := range failures {
		t.Error(f)
	}
	if admitted != answered {
		t.Errorf("admitted %d requests, answered %d", admitted, answered)
	}
	if !end.within(start) {
		t.Errorf("after the soak: %v, started at %v", end, start)
	}
}
