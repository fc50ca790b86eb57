// Package registryfake is a FAKE Confluent Schema Registry for tests: an
// in-process httptest server that implements only the REST endpoints
// Joinery's registry client uses (GET /schemas/ids/{id}, POST
// /subjects/{subject}/versions, GET /subjects/{subject}/versions/latest),
// with the registry's JSON bodies and error codes (40401 subject not found,
// 40403 schema not found). It keeps schemas in memory and can be taken
// "down" (connections are dropped, as an unreachable registry's would be)
// to test retries. It is a fake because a real Schema Registry (a JVM
// service) cannot run in the test environment; it must not be used outside
// tests and does no compatibility checking.
package registryfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Registry is the fake registry. Its methods are safe for concurrent use.
type Registry struct {
	srv *httptest.Server

	mu       sync.Mutex
	nextID   int
	byID     map[int]Schema
	subjects map[string][]int // subject -> ids of its versions, in order
	down     atomic.Bool
	// ByID counts GET /schemas/ids/{id} requests served (or refused while down).
	byIDGets atomic.Int64
	// Auth, when set, is the Authorization header every request must carry.
	auth string
}

// Schema is one registered schema.
type Schema struct {
	Schema string
	Type   string // "" or "AVRO", "PROTOBUF", "JSON"
}

// Option configures a Registry.
type Option func(*Registry)

// WithAuth makes the fake answer 401 to requests without this exact
// Authorization header ("Basic …" or "Bearer …").
func WithAuth(header string) Option { return func(r *Registry) { r.auth = header } }

// New starts a fake registry; Close stops it.
func New(opts ...Option) *Registry {
	r := &Registry{nextID: 1, byID: map[int]Schema{}, subjects: map[string][]int{}}
	for _, o := range opts {
		o(r)
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// URL is the base URL of the fake.
func (r *Registry) URL() string { return r.srv.URL }

// Close stops the server.
func (r *Registry) Close() { r.srv.Close() }

// SetDown makes the registry unreachable (true: every connection is
// dropped without an answer) or reachable again.
func (r *Registry) SetDown(down bool) { r.down.Store(down) }

// IDGets is how many GET /schemas/ids/{id} requests arrived.
func (r *Registry) IDGets() int64 { return r.byIDGets.Load() }

// Register adds schema to subject (as POST /subjects/{subject}/versions
// does) and returns its id; the same text in the same subject keeps its id.
func (r *Registry) Register(subject string, s Schema) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.subjects[subject] {
		if r.byID[id] == s {
			return id
		}
	}
	for id, have := range r.byID { // the registry reuses a schema's id across subjects
		if have == s {
			r.subjects[subject] = append(r.subjects[subject], id)
			return id
		}
	}
	id := r.nextID
	r.nextID++
	r.byID[id] = s
	r.subjects[subject] = append(r.subjects[subject], id)
	return id
}

// Subject returns the schemas of subject's versions, oldest first.
func (r *Registry) Subject(subject string) []Schema {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Schema
	for _, id := range r.subjects[subject] {
		out = append(out, r.byID[id])
	}
	return out
}

type errBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	isIDGet := req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/schemas/ids/")
	if isIDGet {
		r.byIDGets.Add(1)
	}
	if r.down.Load() {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		reply(w, http.StatusServiceUnavailable, errBody{50003, "down"})
		return
	}
	if r.auth != "" && req.Header.Get("Authorization") != r.auth {
		reply(w, http.StatusUnauthorized, errBody{40101, "unauthorized"})
		return
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case isIDGet && len(parts) == 3:
		id, err := strconv.Atoi(parts[2])
		if err != nil {
			reply(w, http.StatusNotFound, errBody{40403, "Schema not found"})
			return
		}
		r.mu.Lock()
		s, ok := r.byID[id]
		r.mu.Unlock()
		if !ok {
			reply(w, http.StatusNotFound, errBody{40403, fmt.Sprintf("Schema %d not found", id)})
			return
		}
		body := map[string]any{"schema": s.Schema}
		if s.Type != "" && s.Type != "AVRO" {
			body["schemaType"] = s.Type
		}
		reply(w, http.StatusOK, body)
	case req.Method == http.MethodPost && len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions":
		var in struct {
			Schema     string `json:"schema"`
			SchemaType string `json:"schemaType"`
		}
		if err := json.NewDecoder(req.Body).Decode(&in); err != nil || in.Schema == "" {
			reply(w, http.StatusUnprocessableEntity, errBody{42201, "Invalid schema"})
			return
		}
		id := r.Register(parts[1], Schema{Schema: in.Schema, Type: strings.ToUpper(in.SchemaType)})
		reply(w, http.StatusOK, map[string]int{"id": id})
	case req.Method == http.MethodGet && len(parts) == 4 && parts[0] == "subjects" && parts[2] == "versions" && parts[3] == "latest":
		r.mu.Lock()
		ids := r.subjects[parts[1]]
		var s Schema
		if len(ids) > 0 {
			s = r.byID[ids[len(ids)-1]]
		}
		r.mu.Unlock()
		if len(ids) == 0 {
			reply(w, http.StatusNotFound, errBody{40401, "Subject not found"})
			return
		}
		reply(w, http.StatusOK, map[string]any{"subject": parts[1], "version": len(ids), "id": ids[len(ids)-1], "schema": s.Schema})
	default:
		reply(w, http.StatusNotFound, errBody{404, "not implemented by the fake: " + req.Method + " " + req.URL.Path})
	}
}
