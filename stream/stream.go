package stream

// Stream is a stream of elements of type T, each with an event time, and
// watermarks. Build streams from sources and operators of one Env.
type Stream[T any] struct {
	env  *Env
	outs []outlet[T]
	wm   int64
}

type outlet[T any] struct {
	elem func(v T, ts int64)
	wm   func(w int64)
}

func newStream[T any](env *Env) *Stream[T] { return &Stream[T]{env: env, wm: noWatermark} }

// Env returns the pipeline s belongs to.
func (s *Stream[T]) Env() *Env { return s.env }

func (s *Stream[T]) subscribe(elem func(v T, ts int64), wm func(w int64)) {
	s.outs = append(s.outs, outlet[T]{elem: elem, wm: wm})
}

func (s *Stream[T]) emit(v T, ts int64) {
	for _, o := range s.outs {
		o.elem(v, ts)
	}
}

// emitWatermark forwards w when it is above the stream's last watermark.
func (s *Stream[T]) emitWatermark(w int64) {
	if w <= s.wm {
		return
	}
	s.wm = w
	for _, o := range s.outs {
		o.wm(w)
	}
}

// Map makes one element of each (Flink's map); the time is kept.
func Map[T, O any](s *Stream[T], fn func(T) O) *Stream[O] {
	out := newStream[O](s.env)
	s.subscribe(func(v T, ts int64) { out.emit(fn(v), ts) }, out.emitWatermark)
	return out
}

// FlatMap makes zero or more elements of each, passed to emit (Flink's
// flatMap); they keep the input's time.
func FlatMap[T, O any](s *Stream[T], fn func(v T, emit func(O))) *Stream[O] {
	out := newStream[O](s.env)
	s.subscribe(func(v T, ts int64) { fn(v, func(o O) { out.emit(o, ts) }) }, out.emitWatermark)
	return out
}

// Filter keeps the elements for which keep returns true.
func (s *Stream[T]) Filter(keep func(T) bool) *Stream[T] {
	out := newStream[T](s.env)
	s.subscribe(func(v T, ts int64) {
		if keep(v) {
			out.emit(v, ts)
		}
	}, out.emitWatermark)
	return out
}

// Union merges s with others: every element of every input, in arrival
// order; the watermark is the minimum of the inputs'. A stream given twice
// delivers each element twice (as in Flink).
func (s *Stream[T]) Union(others ...*Stream[T]) *Stream[T] {
	out := newStream[T](s.env)
	ins := append([]*Stream[T]{s}, others...)
	c := newCombiner(len(ins))
	for i, in := range ins {
		sameEnv("union", s.env, in.env)
		in.subscribe(out.emit, func(w int64) {
			if c.update(i, w) {
				out.emitWatermark(c.cur)
			}
		})
	}
	return out
}

// KeyedStream is a stream partitioned by a key (Flink's KeyedStream): the
// keyed operators and joins keep state per key.
type KeyedStream[T any, K comparable] struct {
	s   *Stream[T]
	key func(T) K
}

// KeyBy partitions s by key(elem). K must be comparable (a map key).
func KeyBy[T any, K comparable](s *Stream[T], key func(T) K) *KeyedStream[T, K] {
	return &KeyedStream[T, K]{s: s, key: key}
}

// Stream returns the underlying stream.
func (k *KeyedStream[T, K]) Stream() *Stream[T] { return k.s }

// Reduce is the rolling reduce per key (Flink's KeyedStream.reduce): each
// element is combined with its key's last result, fn(last, elem), and the
// result is emitted at the element's time; a key's first element is emitted
// as it is.
func (k *KeyedStream[T, K]) Reduce(fn func(acc, v T) T) *Stream[T] {
	out := newStream[T](k.s.env)
	state := map[K]T{}
	k.s.subscribe(func(v T, ts int64) {
		key := k.key(v)
		if acc, ok := state[key]; ok {
			v = fn(acc, v)
		}
		state[key] = v
		out.emit(v, ts)
	}, out.emitWatermark)
	return out
}

// ConnectedStreams are two streams connected, keeping their types (Flink's
// connect), for CoMap and CoFlatMap.
type ConnectedStreams[A, B any] struct {
	a *Stream[A]
	b *Stream[B]
}

// Connect connects a and b.
func Connect[A, B any](a *Stream[A], b *Stream[B]) *ConnectedStreams[A, B] {
	sameEnv("connect", a.env, b.env)
	return &ConnectedStreams[A, B]{a: a, b: b}
}

// CoMap maps the elements of the first input with f1 and those of the
// second with f2 into one stream, in arrival order; the watermark is the
// minimum of the inputs'.
func CoMap[A, B, O any](c *ConnectedStreams[A, B], f1 func(A) O, f2 func(B) O) *Stream[O] {
	return CoFlatMap(c, func(v A, emit func(O)) { emit(f1(v)) }, func(v B, emit func(O)) { emit(f2(v)) })
}

// CoFlatMap is CoMap with zero or more outputs per element.
func CoFlatMap[A, B, O any](c *ConnectedStreams[A, B], f1 func(v A, emit func(O)), f2 func(v B, emit func(O))) *Stream[O] {
	out := newStream[O](c.a.env)
	wm := newCombiner(2)
	fwd := func(i int) func(int64) {
		return func(w int64) {
			if wm.update(i, w) {
				out.emitWatermark(wm.cur)
			}
		}
	}
	c.a.subscribe(func(v A, ts int64) { f1(v, func(o O) { out.emit(o, ts) }) }, fwd(0))
	c.b.subscribe(func(v B, ts int64) { f2(v, func(o O) { out.emit(o, ts) }) }, fwd(1))
	return out
}

// Timestamped is an element with its event time (ms).
type Timestamped[T any] struct {
	Value T
	Ts    int64
}

// Collected holds what a stream delivered during Execute.
type Collected[T any] struct {
	elems []Timestamped[T]
}

// Collect records every element of s; read it after Execute.
func Collect[T any](s *Stream[T]) *Collected[T] {
	c := &Collected[T]{}
	s.subscribe(func(v T, ts int64) { c.elems = append(c.elems, Timestamped[T]{Value: v, Ts: ts}) }, func(int64) {})
	return c
}

// Values returns the elements in arrival order (a new slice).
func (c *Collected[T]) Values() []T {
	out := make([]T, len(c.elems))
	for i, e := range c.elems {
		out[i] = e.Value
	}
	return out
}

// Timestamped returns the elements with their times, in arrival order (a
// new slice).
func (c *Collected[T]) Timestamped() []Timestamped[T] {
	return append([]Timestamped[T](nil), c.elems...)
}

// Len returns the number of elements collected.
func (c *Collected[T]) Len() int { return len(c.elems) }

// ForEach calls fn with every element of s and its time, during Execute.
func ForEach[T any](s *Stream[T], fn func(v T, ts int64)) {
	s.subscribe(fn, func(int64) {})
}

// ExecuteAndCollect collects s, executes its Env and returns the elements.
func ExecuteAndCollect[T any](s *Stream[T]) ([]T, error) {
	c := Collect(s)
	if err := s.env.Execute(); err != nil {
		return nil, err
	}
	return c.Values(), nil
}
