package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Client calls a node's admin API: the typed counterpart of the /v1 routes,
// used by joinctl. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
}

// APIError is an error answer of the server: its status and message.
// errors.Is(err, ErrNotFound) holds for a 404 and errors.Is(err,
// errors.ErrUnsupported) for a 501.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("server: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Is makes a 404 match ErrNotFound and a 501 errors.ErrUnsupported.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case errors.ErrUnsupported:
		return e.Status == http.StatusNotImplemented
	}
	return false
}

// NewClient returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:8081"; a bare host:port gets http://). token, when not
// empty, is sent as a bearer token. hc nil means http.DefaultClient.
func NewClient(baseURL, token string, hc *http.Client) (*Client, error) {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("admin: server URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("admin: server URL %q: want http(s)://host:port", baseURL)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, token: token, hc: hc}, nil
}

func keyPath(job, key string, rest ...string) string {
	p := "/v1/jobs/" + url.PathEscape(job) + "/keys/" + url.PathEscape(key)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// Members calls GET /v1/members.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	var ms []Member
	return ms, c.do(ctx, http.MethodGet, "/v1/members", nil, &ms)
}

// Locate calls GET /v1/jobs/{job}/keys/{key}/location.
func (c *Client) Locate(ctx context.Context, job, key string) (Location, error) {
	var l Location
	return l, c.do(ctx, http.MethodGet, keyPath(job, key, "location"), nil, &l)
}

// Inspect calls GET /v1/jobs/{job}/keys/{key}.
func (c *Client) Inspect(ctx context.Context, job, key string) (KeyState, error) {
	var ks KeyState
	return ks, c.do(ctx, http.MethodGet, keyPath(job, key), nil, &ks)
}

// Why calls GET /v1/jobs/{job}/keys/{key}/why.
func (c *Client) Why(ctx context.Context, job, key string) (Why, error) {
	var w Why
	return w, c.do(ctx, http.MethodGet, keyPath(job, key, "why"), nil, &w)
}

// Watermarks calls GET /v1/jobs/{job}/watermarks.
func (c *Client) Watermarks(ctx context.Context, job string) (Watermarks, error) {
	var w Watermarks
	return w, c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(job)+"/watermarks", nil, &w)
}

// Hot calls GET /v1/jobs/{job}/hot?n=n.
func (c *Client) Hot(ctx context.Context, job string, n int) ([]HotKey, error) {
	var hk []HotKey
	q := url.Values{"n": {strconv.Itoa(n)}}
	return hk, c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(job)+"/hot", q, &hk)
}

// Passivate calls POST /v1/jobs/{job}/keys/{key}/passivate.
func (c *Client) Passivate(ctx context.Context, job, key string) error {
	return c.do(ctx, http.MethodPost, keyPath(job, key, "passivate"), nil, nil)
}

// Evict calls POST /v1/jobs/{job}/keys/{key}/evict.
func (c *Client) Evict(ctx context.Context, job, key string) error {
	return c.do(ctx, http.MethodPost, keyPath(job, key, "evict"), nil, nil)
}

// do sends one request and decodes a 2xx JSON answer into out (if not nil).
// A non-2xx answer is an *APIError.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, out any) error {
	u := *c.base
	u.RawPath = u.EscapedPath() + path
	u.Path += mustUnescape(path)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var eb ErrorBody
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &eb) == nil && eb.Error != "" {
			msg = eb.Error
		}
		return &APIError{Status: resp.StatusCode, Message: msg}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return nil
}

func mustUnescape(p string) string {
	s, err := url.PathUnescape(p)
	if err != nil {
		return p
	}
	return s
}
