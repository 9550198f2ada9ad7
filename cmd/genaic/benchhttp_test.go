package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// What a scripted server does with a connection after an answer.
const (
	keepConn = iota
	closeConn
	// poisonConn keeps it open, but answers 500 to any request on it: a
	// client must not reuse it.
	poisonConn
)

// scriptedServer answers every request on a connection of its own with
// the bytes answer returns for the request's body, read as net/http
// reads requests (so that the request's bytes are checked too), then
// does with the connection what answer says (keepConn, closeConn,
// poisonConn). It returns the server's address and the connections it
// accepted.
func scriptedServer(t *testing.T, answer func(body string) (reply string, after int)) (string, *atomic.Int32) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	var conns atomic.Int32
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				poisoned := false
				for {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					body, err := io.ReadAll(req.Body)
					if err != nil || req.Method != http.MethodPost || req.URL.Path != "/infer" || req.Header.Get("Content-Type") != "application/json" {
						fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
						return
					}
					reply, after := answer(string(body))
					if poisoned {
						reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 6\r\n\r\nreused"
					}
					if _, err := io.WriteString(c, reply); err != nil || after == closeConn {
						return
					}
					poisoned = poisoned || after == poisonConn
				}
			}()
		}
	}()
	return lis.Addr().String(), &conns
}

// TestPostConns: the bench's HTTP client reads every framing of an
// answer an HTTP/1.1 server may send (Content-Length, chunks with a
// trailer, a body ending with the connection, informational answers
// first, no body for 204), keeps a connection only where the answer
// allows it, keeps an error answer's body, sends a request again on a new
// connection where the server closed the idle one before reading it, and
// fails a request whose answer breaks off.
func TestPostConns(t *testing.T) {
	cases := []struct {
		name, reply   string
		after         int // what the server does with the connection
		status        int
		body          string
		newConnection bool // the next request needs another connection
		broken        bool
	}{
		{name: "length", reply: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", status: 200},
		{name: "chunked", reply: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n", status: 200},
		{name: "error", reply: "HTTP/1.1 429 Too Many Requests\r\ncontent-length: 13\r\n\r\n{\"error\":\"x\"}", status: 429, body: `{"error":"x"}`},
		{name: "error chunked", reply: "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n4\r\noops\r\n0\r\n\r\n", status: 500, body: "oops"},
		{name: "informational", reply: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200},
		{name: "no content", reply: "HTTP/1.1 204 No Content\r\n\r\n", status: 204},
		{name: "close", reply: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", after: poisonConn, status: 200, newConnection: true},
		{name: "until close", reply: "HTTP/1.1 400 Bad Request\r\n\r\nto the end", after: closeConn, status: 400, body: "to the end", newConnection: true},
		{name: "1.0", reply: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", after: poisonConn, status: 200, newConnection: true},
		{name: "1.0 keep-alive", reply: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", status: 200},
		{name: "closed idle", reply: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", after: closeConn, status: 200, newConnection: true},
		{name: "broken", reply: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", after: closeConn, broken: true, newConnection: true},
		{name: "no status line", reply: "SSH-2.0-x\r\n\r\n", after: closeConn, broken: true, newConnection: true},
	}
	addr, conns := scriptedServer(t, func(body string) (string, int) {
		for _, c := range cases {
			if c.name == body {
				return c.reply, c.after
			}
		}
		return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", keepConn
	})
	p, err := newPostConns("http://"+addr, 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	post := func(body string) (int, string, error) {
		status, b, err := p.post(postRequest(addr, "/infer", []byte(body), "Content-Type", "application/json"))
		return status, string(b), err
	}
	if status, _, err := post("first"); err != nil || status != 200 {
		t.Fatalf("first: %d %v", status, err)
	}
	for _, c := range cases {
		before := conns.Load()
		status, body, err := post(c.name)
		switch {
		case c.broken && err == nil:
			t.Errorf("%s: read as %d %q", c.name, status, body)
		case !c.broken && (err != nil || status != c.status || body != c.body):
			t.Errorf("%s: %d %q %v; want %d %q", c.name, status, body, err, c.status, c.body)
		}
		if conns.Load() != before {
			t.Errorf("%s: sent on a new connection", c.name)
		}
		// The next request goes on the same connection where the answer
		// allows it (the server counts connections).
		before = conns.Load()
		if status, _, err := post("next"); err != nil || status != 200 {
			t.Fatalf("after %s: %d %v", c.name, status, err)
		}
		if got := conns.Load() - before; got != map[bool]int32{false: 0, true: 1}[c.newConnection] {
			t.Errorf("after %s: %d new connections", c.name, got)
		}
	}
}

// TestPostConnsGone: a server that is gone fails the request at once,
// not after the timeout, and a server that never answers fails it at the
// timeout.
func TestPostConnsGone(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	p, err := newPostConns("http://"+silent.Addr().String(), 1, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.post(postRequest("x", "/infer", nil)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a server that never answers: %v; want a timeout", err)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	addr := gone.Listener.Addr().String()
	gone.Close()
	p, err = newPostConns("http://"+addr, 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.post(postRequest("x", "/infer", nil)); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a server that is gone: %v", err)
	}
}
