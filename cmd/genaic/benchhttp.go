package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// A bench's HTTP client keeps its own CPU small, since a server on the
// same machine shares it; net/http's Transport hands every request to a
// writing goroutine and every answer back from a reading one, and builds
// a Request and parses a URL per send. postConns sends each request as the bytes of
// an HTTP/1.1 POST built once, head and body, with one write on a
// keep-alive connection of its own, and reads the answer on the sender's
// goroutine: the status, the headers that frame the body, and the body
// (its Content-Length or chunks), kept only where the status is not 200.

// postConns are the keep-alive connections of the clients posting to one
// server.
type postConns struct {
	addr    string      // host:port
	tls     *tls.Config // for https; nil for http
	timeout time.Duration
	idle    chan *postConn // the connections no request is using
}

type postConn struct {
	c net.Conn
	r *bufio.Reader
}

// newPostConns posts to base (http://host[:port][/path]), keeping up to
// keep idle connections.
func newPostConns(base string, keep int, timeout time.Duration) (*postConns, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	p := &postConns{addr: u.Host, timeout: timeout, idle: make(chan *postConn, keep)}
	port := "80"
	switch u.Scheme {
	case "http":
	case "https":
		p.tls, port = &tls.Config{ServerName: u.Hostname()}, "443"
	default:
		return nil, fmt.Errorf("%s: the scheme is none of http, https", base)
	}
	if u.Port() == "" {
		p.addr = net.JoinHostPort(u.Hostname(), port)
	}
	return p, nil
}

// dial opens a connection.
func (p *postConns) dial() (*postConn, error) {
	d := &net.Dialer{Timeout: p.timeout}
	var c net.Conn
	var err error
	if p.tls != nil {
		c, err = tls.DialWithDialer(d, "tcp", p.addr, p.tls)
	} else {
		c, err = d.Dial("tcp", p.addr)
	}
	if err != nil {
		return nil, err
	}
	return &postConn{c: c, r: bufio.NewReader(c)}, nil
}

// postRequest is the bytes of a POST of body to path on host, with the
// headers given (name, value, ...).
func postRequest(host, path string, body []byte, headers ...string) []byte {
	b := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: genaic-bench\r\n", path, host)
	for i := 0; i+1 < len(headers); i += 2 {
		b = fmt.Appendf(b, "%s: %s\r\n", headers[i], headers[i+1])
	}
	b = fmt.Appendf(b, "Content-Length: %d\r\n\r\n", len(body))
	return append(b, body...)
}

// post sends a request built by postRequest and reads its answer: its
// status, and its body where the status is not 200.
func (p *postConns) post(req []byte) (status int, body []byte, err error) {
	select {
	case pc := <-p.idle:
		status, body, err := p.send(pc, req)
		if !errors.Is(err, errUnanswered) {
			return status, body, err
		}
		// The server closed the idle connection before it read the
		// request: as with net/http's Transport, the request goes again,
		// on a new one.
	default:
	}
	pc, err := p.dial()
	if err != nil {
		return 0, nil, err
	}
	return p.send(pc, req)
}

// send sends req on pc and reads its answer, then keeps pc for the next
// request where the answer allows it.
func (p *postConns) send(pc *postConn, req []byte) (int, []byte, error) {
	status, body, keep, err := pc.roundTrip(req, p.timeout)
	if err != nil {
		pc.c.Close()
		return 0, nil, err
	}
	p.put(pc, keep)
	return status, body, nil
}

// put keeps a connection for the next request, or closes it.
func (p *postConns) put(pc *postConn, keep bool) {
	if keep {
		select {
		case p.idle <- pc:
			return
		default:
		}
	}
	pc.c.Close()
}

func (p *postConns) close() {
	for {
		select {
		case pc := <-p.idle:
			pc.c.Close()
		default:
			return
		}
	}
}

// errUnanswered is a connection that ended before a byte of the answer.
var errUnanswered = errors.New("the connection closed before the answer")

// maxErrorBody bounds what is kept of an error answer's body.
const maxErrorBody = 4096

// roundTrip writes req and reads its answer; keep says whether the
// connection may carry another request.
func (pc *postConn) roundTrip(req []byte, timeout time.Duration) (status int, body []byte, keep bool, err error) {
	pc.c.SetDeadline(time.Now().Add(timeout))
	if _, err := pc.c.Write(req); err != nil {
		return 0, nil, false, fmt.Errorf("%w: %v", errUnanswered, err)
	}
	// Informational answers (1xx) come before the answer, which follows
	// on the same connection.
	first := true
	for status = 100; status >= 100 && status < 200; first = false {
		var framing answerFraming
		status, framing, err = pc.readHead(first)
		if err != nil {
			return 0, nil, false, err
		}
		keep = framing.keep
		if status >= 200 {
			if body, err = pc.readBody(status, framing); err != nil {
				return 0, nil, false, fmt.Errorf("the answer broke off: %v", err)
			}
		}
	}
	return status, body, keep, nil
}

// answerFraming is what an answer's head says of its body and connection.
type answerFraming struct {
	length  int64 // -1: not given
	chunked bool
	keep    bool // the connection may carry another request
}

// readHead reads an answer's status line and headers. first says whether
// it is the request's first: a connection that ends before a byte of it
// is errUnanswered.
func (pc *postConn) readHead(first bool) (int, answerFraming, error) {
	f := answerFraming{length: -1}
	line, err := pc.r.ReadSlice('\n')
	if err != nil {
		if first && len(line) == 0 && (err == io.EOF || errors.Is(err, syscall.ECONNRESET)) {
			err = fmt.Errorf("%w: %v", errUnanswered, err)
		}
		return 0, f, err
	}
	// HTTP/1.x NNN reason
	proto, rest, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(" "))
	code, _, _ := bytes.Cut(rest, []byte(" "))
	status, err := strconv.Atoi(string(code))
	if err != nil || len(code) != 3 || !bytes.HasPrefix(proto, []byte("HTTP/1.")) {
		return 0, f, fmt.Errorf("the answer starts %q, no HTTP/1.x status line", line)
	}
	f.keep = string(proto) != "HTTP/1.0"
	for {
		line, err := pc.r.ReadSlice('\n')
		if err != nil {
			return 0, f, fmt.Errorf("reading the answer's headers: %v", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if !f.chunked && f.length < 0 && hasBody(status) {
				f.keep = false // the body ends with the connection
			}
			return status, f, nil
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if f.length, err = strconv.ParseInt(string(value), 10, 64); err != nil || f.length < 0 {
				return 0, f, fmt.Errorf("the answer's Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			f.chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			f.keep = bytes.EqualFold(value, []byte("keep-alive")) || f.keep && !bytes.EqualFold(value, []byte("close"))
		}
	}
}

// hasBody reports whether an answer of the status has a body, whatever
// its head says: informational ones, 204 and 304 have none.
func hasBody(status int) bool {
	return status >= 200 && status != 204 && status != 304
}

// readBody reads an answer's body as its head frames it, returning it
// (its first maxErrorBody bytes) where the status is not 200.
func (pc *postConn) readBody(status int, f answerFraming) ([]byte, error) {
	if !hasBody(status) {
		return nil, nil
	}
	if status == 200 && !f.chunked && f.length >= 0 {
		_, err := pc.r.Discard(int(f.length))
		return nil, err
	}
	var r io.Reader
	switch {
	case f.chunked:
		r = httputil.NewChunkedReader(pc.r)
	case f.length >= 0:
		r = io.LimitReader(pc.r, f.length)
	default:
		r = pc.r // the body ends with the connection (readHead)
	}
	var body []byte
	var err error
	if status != 200 {
		body, err = io.ReadAll(io.LimitReader(r, maxErrorBody))
	}
	if err == nil {
		_, err = io.Copy(io.Discard, r)
	}
	if err == nil && f.chunked {
		err = pc.skipTrailer()
	}
	return body, err
}

// skipTrailer reads the trailer of a chunked body, up to its empty line.
func (pc *postConn) skipTrailer() error {
	for {
		line, err := pc.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
}
