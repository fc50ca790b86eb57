// Package bearer owns how Joinery's HTTP servers (admin, console, HTTP
// ingest) read a bearer token from a request: the Authorization header's
// "Bearer" scheme, matched case-insensitively as RFC 7235 says of
// authentication schemes, then the token. It compares nothing itself.
package bearer

import (
	"net/http"
	"strings"
)

// Token returns the bearer token of r's Authorization header ("" without
// one, with another scheme, or with no token after the scheme).
func Token(r *http.Request) string { return Parse(r.Header.Get("Authorization")) }

// Parse returns the token of an Authorization header value: "Bearer t",
// "bearer t" and "BEARER  t" all give "t"; "Basic t" and a bare "t" give "".
func Parse(header string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}
