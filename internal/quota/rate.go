package quota

import "time"

// Window is the sampling of a rate: Samples windows of Size each
// (quota.window.num, quota.window.size.seconds).
type Window struct {
	Samples int
	Size    time.Duration
}

// DefaultWindow is Kafka's default: 11 windows of one second.
var DefaultWindow = Window{Samples: 11, Size: time.Second}

func (w Window) valid() Window {
	if w.Samples < 2 {
		w.Samples = DefaultWindow.Samples
	}
	if w.Size <= 0 {
		w.Size = DefaultWindow.Size
	}
	return w
}

type sample struct {
	start int64 // ms: when the sample's window began
	value float64
}

// Rate measures a rate per second over sampled windows exactly as Kafka's
// Rate over a SampledStat does: a sample window starts at the first record
// after the previous one ended, samples older than Samples×Size are reset,
// and the elapsed time divided by is never less than Samples−1 full
// windows (so a new client's first burst is measured over ten seconds,
// not over the milliseconds it took). Not safe for concurrent use.
type Rate struct {
	w       Window
	samples []sample
	cur     int
}

// NewRate returns an empty rate.
func NewRate(w Window) *Rate { return &Rate{w: w.valid()} }

func ms(t time.Time) int64 { return t.UnixMilli() }

// Record adds value at now.
func (r *Rate) Record(value float64, now time.Time) {
	t := ms(now)
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: t})
		r.cur = 0
	}
	s := &r.samples[r.cur]
	if t >= s.start+r.w.Size.Milliseconds() {
		r.cur = (r.cur + 1) % r.w.Samples
		if r.cur >= len(r.samples) {
			r.samples = append(r.samples, sample{start: t})
		} else {
			r.samples[r.cur] = sample{start: t}
		}
		s = &r.samples[r.cur]
	}
	s.value += value
}

// purge resets the samples that fell out of the whole window.
func (r *Rate) purge(t int64) {
	expire := int64(r.w.Samples) * r.w.Size.Milliseconds()
	for i := range r.samples {
		if t-r.samples[i].start >= expire {
			r.samples[i] = sample{start: t}
		}
	}
}

// WindowSize is the time the rate is measured over at now (Kafka's
// Rate.windowSize).
func (r *Rate) WindowSize(now time.Time) time.Duration {
	t := ms(now)
	r.purge(t)
	oldest := t
	for _, s := range r.samples {
		if s.start < oldest {
			oldest = s.start
		}
	}
	elapsed := t - oldest
	size := r.w.Size.Milliseconds()
	full := elapsed / size
	if min := int64(r.w.Samples - 1); full < min {
		elapsed += (min - full) * size
	}
	return time.Duration(elapsed) * time.Millisecond
}

// Measure returns the rate per second at now.
func (r *Rate) Measure(now time.Time) float64 {
	ws := r.WindowSize(now) // purges
	var total float64
	for _, s := range r.samples {
		total += s.value
	}
	return total / ws.Seconds()
}

// Throttle returns how long a client measured by r must wait for its rate
// to come back to limit: zero within the quota, else Kafka's
// (rate − limit) / limit × window size, rounded to the millisecond.
func (r *Rate) Throttle(limit float64, now time.Time) time.Duration {
	v := r.Measure(now)
	if limit <= 0 || v <= limit {
		return 0
	}
	ms := (v - limit) / limit * float64(r.WindowSize(now).Milliseconds())
	return time.Duration(int64(ms+0.5)) * time.Millisecond
}

// TokenBucket is Kafka's TokenBucket (KIP-599, controller mutations): it
// holds up to rate × Samples × Size tokens, refills at rate per second, and
// every mutation takes its count; a client may go below zero once and is
// throttled until the bucket is back at zero.
type TokenBucket struct {
	w      Window
	tokens float64
	last   int64
	init   bool
}

// NewTokenBucket returns a bucket (full on first use).
func NewTokenBucket(w Window) *TokenBucket { return &TokenBucket{w: w.valid()} }

func (b *TokenBucket) refill(rate float64, t int64) {
	burst := rate * float64(b.w.Samples) * b.w.Size.Seconds()
	if !b.init {
		b.tokens, b.last, b.init = burst, t, true
		return
	}
	if t > b.last {
		b.tokens = min(burst, b.tokens+rate*float64(t-b.last)/1000)
		b.last = t
	}
}

// Tokens returns the tokens left at now for a bucket refilled at rate.
func (b *TokenBucket) Tokens(rate float64, now time.Time) float64 {
	b.refill(rate, ms(now))
	return b.tokens
}

// Record takes n tokens at now.
func (b *TokenBucket) Record(rate, n float64, now time.Time) {
	b.refill(rate, ms(now))
	b.tokens -= n
}

// Throttle returns how long until the bucket is back at zero tokens (zero
// when it is not below): Kafka's −tokens / rate seconds, rounded to the
// millisecond.
func (b *TokenBucket) Throttle(rate float64, now time.Time) time.Duration {
	tok := b.Tokens(rate, now)
	if tok >= 0 || rate <= 0 {
		return 0
	}
	return time.Duration(int64(-tok/rate*1000+0.5)) * time.Millisecond
}
