package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Pending asks the scheduler serving Handler at address (host:port, or a
// URL) for its pending pods in the order they wait, each with its reason:
// of namespace (empty: all), from offset, at most limit (0: the server's
// default). The answer is text, or JSON if format is "json"; one that is
// not schedq's is an error, as with Explain.
func Pending(ctx context.Context, c *http.Client, address, namespace string, offset, limit int, format string) ([]byte, error) {
	base := baseURL(address)
	q := url.Values{"order": {"pop"}}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if format == "text" {
		q.Set("format", "text")
	}
	u := strings.TrimSuffix(base, "/") + "/debug/queue?" + q.Encode()
	body, err := ask(ctx, c, address, u, format)
	if errors.As(err, new(answerTooLarge)) {
		return nil, fmt.Errorf("%w: ask for fewer pods (--limit)", err)
	}
	return body, err
}
