package serve

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/genaic/genaic/backend"
)

// How long a client may hold a connection without moving a request on:
// the defaults of Config's timeouts, and the longest any of them may be.
const (
	DefaultHeaderTimeout    = 30 * time.Second
	DefaultBodyTimeout      = time.Minute
	DefaultIdleTimeout      = 2 * time.Minute
	DefaultHandshakeTimeout = 10 * time.Second
	MaxTimeout              = time.Hour
)

// timeouts fills in cfg's connection timeouts left 0, and refuses one
// that is negative or longer than MaxTimeout.
func (cfg *Config) timeouts() error {
	for _, t := range []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"header timeout", &cfg.HeaderTimeout, DefaultHeaderTimeout},
		{"body timeout", &cfg.BodyTimeout, DefaultBodyTimeout},
		{"idle timeout", &cfg.IdleTimeout, DefaultIdleTimeout},
		{"handshake timeout", &cfg.HandshakeTimeout, DefaultHandshakeTimeout},
	} {
		if *t.d == 0 {
			*t.d = t.def
		}
		if err := CheckTimeout(t.name, *t.d); err != nil {
			return err
		}
	}
	return nil
}

// CheckTimeout refuses a connection timeout that is not above 0 and at
// most MaxTimeout.
func CheckTimeout(name string, d time.Duration) error {
	if d <= 0 || d > MaxTimeout {
		return fmt.Errorf("%s %v: want a duration above 0 and at most %v", name, d, MaxTimeout)
	}
	return nil
}

// NewHTTPServer returns an http.Server for Handler with the server's
// header and idle timeouts: a client that sends no complete request
// headers in time, or leaves a keep-alive connection idle, loses the
// connection. (Bodies have their own timeout, set by Handler once the
// headers are read: a server-wide ReadTimeout would also cancel a request
// still running past it.)
func (s *Server) NewHTTPServer() *http.Server {
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.cfg.HeaderTimeout, IdleTimeout: s.cfg.IdleTimeout}
}

// grpcConnOptions bound a gRPC connection's handshake (a client that
// never sends the HTTP/2 preface is closed after HandshakeTimeout) and
// its idle time (a connection without a call for IdleTimeout is sent
// GOAWAY).
func (s *Server) grpcConnOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ConnectionTimeout(s.cfg.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: s.cfg.IdleTimeout})}
}

// errBodyTimeout is the error of a body that did not arrive within the
// body timeout.
var errBodyTimeout = errors.New("the request body did not arrive in time")

// bounded wraps the routes: a request whose Content-Length is over the
// request size limit is refused (413) before a byte of its body is read,
// and a body must arrive within the body timeout, so that a client
// trickling one can hold neither a connection nor a drain for longer.
func (s *Server) bounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.cfg.MaxRequestBytes {
			s.bodyFailed(w, &http.MaxBytesError{Limit: s.cfg.MaxRequestBytes})
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody is a body read under the connection's read deadline. The
// deadline is lifted at the body's end: past it, the server's read that
// watches for the client going away must not time out, since that would
// cancel the request while it runs.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF && !b.done:
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = errBodyTimeout
	}
	return n, err
}

// bodyFailed answers a request whose body could not be read: 413 past the
// size limit, 408 where it did not arrive in time (both closing the
// connection, whose unread rest is of no use), else 400.
func (s *Server) bodyFailed(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		s.m.refusedBodies.WithLabelValues("too_large").Inc()
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("the request is larger than the server takes (%d bytes); send fewer items per request", mbe.Limit), "rule": backend.RunInput})
	case errors.Is(err, errBodyTimeout):
		s.m.refusedBodies.WithLabelValues("timeout").Inc()
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusRequestTimeout, map[string]string{"error": fmt.Sprintf("the request body did not arrive within %v", s.cfg.BodyTimeout), "rule": backend.RunInput})
	default:
		writeError(w, inputErr("reading the request: %v", err))
	}
}
