package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
)

// apiFunc answers one /v1 request: a value to encode as JSON (nil for 204)
// or an error mapped by errorStatus.
type apiFunc func(ctx context.Context, b Backend, r *http.Request) (any, error)

// errBadRequest marks a client error in a request's parameters (400).
type errBadRequest struct{ msg string }

func (e errBadRequest) Error() string { return e.msg }

// errUnimplemented is answered for a missing Backend extension (501).
type errUnimplemented struct{ what string }

func (e errUnimplemented) Error() string { return "this node does not support " + e.what }

var errNoBackend = errors.New("node not started")

// read wraps a read-only route: read or admin scope.
func (s *Server) read(f apiFunc) http.Handler {
	return s.authed(scopeRead, s.api(f))
}

// keyed refuses a key over MaxKeyBytes with 414 before f runs.
func keyed(f apiFunc) apiFunc {
	return func(ctx context.Context, b Backend, r *http.Request) (any, error) {
		if len(r.PathValue("key")) > MaxKeyBytes {
			return nil, errKeyTooLong
		}
		return f(ctx, b, r)
	}
}

// errKeyTooLong is answered 414.
var errKeyTooLong = fmt.Errorf("key longer than %d bytes", MaxKeyBytes)

// write wraps a write action on a key: admin scope only, refused without a
// configured admin token, and logged.
func (s *Server) write(action string, do func(KeyActions, context.Context, string, string) error) http.Handler {
	f := func(ctx context.Context, b Backend, r *http.Request) (any, error) {
		job, key := r.PathValue("job"), r.PathValue("key")
		ka, ok := b.(KeyActions)
		if !ok {
			return nil, errUnimplemented{"key actions (passivate, evict)"}
		}
		err := do(ka, ctx, job, key)
		lvl := slog.LevelInfo
		if err != nil {
			lvl = slog.LevelWarn
		}
		s.log.Log(ctx, lvl, "admin: key action", "action", action, "job", job, "key", key, "remote", r.RemoteAddr, "err", err)
		return nil, err
	}
	guarded := s.authed(scopeAdmin, s.api(keyed(f)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token == "" {
			s.log.Warn("admin: write action refused: no token configured", "path", r.URL.Path, "remote", r.RemoteAddr)
			writeError(w, http.StatusForbidden, "write actions are disabled: the server has no admin token configured")
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// api runs f with the backend and a bounded context and writes its answer.
func (s *Server) api(f apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Backend == nil {
			writeError(w, http.StatusServiceUnavailable, errNoBackend.Error())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		v, err := f(ctx, s.cfg.Backend, r)
		if err != nil {
			code := errorStatus(err)
			if code >= 500 && code != http.StatusNotImplemented {
				s.log.Warn("admin: request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
			}
			writeError(w, code, err.Error())
			return
		}
		if v == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

// errorStatus maps an error of a Backend or a handler to an HTTP status.
func errorStatus(err error) int {
	var bad errBadRequest
	var unimpl errUnimplemented
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest
	case errors.Is(err, errKeyTooLong):
		return http.StatusRequestURITooLong
	case errors.As(err, &unimpl), errors.Is(err, errors.ErrUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	default:
		return http.StatusInternalServerError
	}
}

func (s *Server) handleMembers(ctx context.Context, b Backend, _ *http.Request) (any, error) {
	ms, err := b.Members(ctx)
	if ms == nil {
		ms = []Member{}
	}
	return ms, err
}

func (s *Server) handleLocate(ctx context.Context, b Backend, r *http.Request) (any, error) {
	loc, err := b.Locate(ctx, r.PathValue("job"), r.PathValue("key"))
	return loc, err
}

func (s *Server) handleInspect(ctx context.Context, b Backend, r *http.Request) (any, error) {
	ks, err := b.Inspect(ctx, r.PathValue("job"), r.PathValue("key"))
	return ks, err
}

func (s *Server) handleWhy(ctx context.Context, b Backend, r *http.Request) (any, error) {
	ex, ok := b.(Explainer)
	if !ok {
		return nil, errUnimplemented{"key why"}
	}
	why, err := ex.Why(ctx, r.PathValue("job"), r.PathValue("key"))
	if err != nil {
		return nil, err
	}
	if why.Waits == nil {
		why.Waits = []Wait{}
	}
	return why, nil
}

func (s *Server) handleWatermarks(ctx context.Context, b Backend, r *http.Request) (any, error) {
	wm, ok := b.(Watermarker)
	if !ok {
		return nil, errUnimplemented{"watermarks"}
	}
	job := r.PathValue("job")
	parts, global, err := wm.Watermarks(ctx, job)
	if err != nil {
		return nil, err
	}
	if parts == nil {
		parts = []Watermark{}
	}
	return Watermarks{Job: job, Global: global, Partitions: parts}, nil
}

func (s *Server) handleHot(ctx context.Context, b Backend, r *http.Request) (any, error) {
	n := 10
	if q := r.URL.Query().Get("n"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v < 1 || v > MaxHot {
			return nil, errBadRequest{fmt.Sprintf("n: want an integer from 1 to %d (got %q)", MaxHot, q)}
		}
		n = v
	}
	hk, ok := b.(HotKeys)
	if !ok {
		return nil, errUnimplemented{"hot keys"}
	}
	keys, err := hk.Hot(ctx, r.PathValue("job"), n)
	if err != nil {
		return nil, err
	}
	if keys == nil {
		keys = []HotKey{}
	}
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys, nil
}

// ErrorBody is the JSON body of every error answer of the /v1 routes.
type ErrorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorBody{Error: "admin: encode answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
