package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// notInQueue is in the text of Handler's 404 for a pod the queue does not
// hold; Explain tells it from another server's 404 by it.
const notInQueue = "is not in schedq's queue"

// maxAnswer bounds how much of an answer Explain and Pending read.
const maxAnswer = 8 << 20

// answerTooLarge is the error of an answer longer than maxAnswer: cut,
// it would not parse, and read as another server's.
type answerTooLarge struct{ address string }

func (e answerTooLarge) Error() string {
	return fmt.Sprintf("the answer of %s is larger than %d MiB", e.address, maxAnswer>>20)
}

// Explain asks the scheduler serving Handler at address (host:port, or a
// URL) why the pod namespace/name is pending, and returns its answer:
// text, or JSON if format is "json". An answer that is not one of schedq's
// (another server, a proxy's error page) is an error that says so, with
// the HTTP status and never the page itself.
func Explain(ctx context.Context, c *http.Client, address, namespace, name, format string) ([]byte, error) {
	base := baseURL(address)
	u := fmt.Sprintf("%s/debug/queue/%s/%s", strings.TrimSuffix(base, "/"), url.PathEscape(namespace), url.PathEscape(name))
	if format == "text" {
		u += "?format=text"
	}
	return ask(ctx, c, address, u, format)
}

// answer interprets a response of the explain endpoint.
func answer(status int, ctype string, body []byte, address, format string) ([]byte, error) {
	notSchedq := fmt.Errorf("HTTP %d from %s: is this a schedq scheduler?", status, address)
	msg := strings.TrimSpace(string(body))
	switch {
	case status == http.StatusBadRequest && strings.HasPrefix(msg, plainToTLS):
		return nil, plainHTTPError(address)
	case status == http.StatusUnauthorized:
		return nil, fmt.Errorf("HTTP 401 from %s: not authenticated: pass --token (schedq's HTTPS port has the API server review callers' tokens)", address)
	case status == http.StatusForbidden:
		return nil, fmt.Errorf("HTTP 403 from %s: the caller may not read /debug/queue (bind it to the schedq-metrics-reader role)", address)
	case status == http.StatusOK && format == "json" && ctype == "application/json" && json.Valid(body):
		return body, nil
	case status == http.StatusOK && format != "json" && ctype == "text/plain" && msg != "":
		return body, nil
	case status == http.StatusNotFound && ctype == "text/plain" && strings.Contains(msg, notInQueue):
		return nil, fmt.Errorf("%s", msg)
	case status != http.StatusOK && status != http.StatusNotFound && ctype == "text/plain" && oneLine(msg):
		return nil, fmt.Errorf("HTTP %d from %s: %s", status, address, msg)
	}
	return nil, notSchedq
}

// plainToTLS begins the 400 with which Go's HTTPS servers, the
// scheduler's --secure-port among them, answer a plain HTTP request.
const plainToTLS = "Client sent an HTTP request to an HTTPS server"

// plainHTTPError says that address, asked over plain HTTP, serves HTTPS
// (deploy/schedq.yaml's scheduler serves only HTTPS), and how to ask it.
func plainHTTPError(address string) error {
	host := address
	if u, err := url.Parse(baseURL(address)); err == nil && u.Host != "" {
		host = u.Host
	}
	return fmt.Errorf("--address %s: the scheduler serves HTTPS there, and this is plain HTTP: give --address https://%s, with --token and --certificate-authority (or --insecure-skip-tls-verify)", address, host)
}

// contentType is the media type of a response, without its parameters.
func contentType(h http.Header) string {
	t, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return t
}

// oneLine reports whether msg is a short, non-empty, single-line message,
// worth showing as it is.
func oneLine(msg string) bool {
	return msg != "" && len(msg) <= 300 && !strings.ContainsAny(msg, "\n<\x00")
}

// CheckAddress refuses, before any connection, a scheduler address that
// Explain and Pending could not ask: empty, not a URL, a scheme other than
// http or https, no host, or a user and password, a query or a fragment,
// which the request's path and query appended to it would break (the
// first is refused without echoing the address, which holds a password).
func CheckAddress(address string) error {
	u, err := url.Parse(baseURL(address))
	switch {
	case address == "":
		return errors.New("--address: empty; give the scheduler's host:port or URL")
	case err != nil:
		return fmt.Errorf("--address %q: not host:port nor a URL", address)
	case u.User != nil:
		return errors.New("--address: a user and password have no place in it; give --token")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("--address %q: the scheme must be http or https, not %s", address, u.Scheme)
	case u.Host == "":
		return fmt.Errorf("--address %q: no host", address)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("--address %q: a query (?%s) has no place in it", address, u.RawQuery)
	case u.Fragment != "":
		return fmt.Errorf("--address %q: a fragment (#%s) has no place in it", address, u.Fragment)
	}
	return nil
}

// baseURL is address as a URL: host:port is taken as plain HTTP.
func baseURL(address string) string {
	if !strings.Contains(address, "://") {
		return "http://" + address
	}
	return address
}

// ask GETs u from the scheduler at address and checks that the answer is
// one of schedq's (see answer). At most maxAnswer bytes are read.
func ask(ctx context.Context, c *http.Client, address, u, format string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("--address %s: %w", address, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scheduler at %s is not reachable: %w", address, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", address, err)
	}
	if len(body) > maxAnswer && resp.StatusCode == http.StatusOK {
		return nil, answerTooLarge{address}
	}
	if resp.StatusCode == http.StatusUnauthorized && resp.Request != nil && resp.Request.Header.Get("Authorization") != "" {
		return nil, fmt.Errorf("HTTP 401 from %s: not authenticated: the API server did not accept --token (expired, or not a token it knows)", address)
	}
	return answer(resp.StatusCode, contentType(resp.Header), body, address, format)
}
