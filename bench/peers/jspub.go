// jspub: the JetStream publisher used by bench/peers/nats_jetstream.sh.
// Creates (or recreates) a file-storage stream with one replica, then
// publishes fixed-size messages with PublishAsync keeping at most -inflight
// unacknowledged, closed loop, for -warmup then -seconds. Reports acked
// messages/s, MB/s (payload bytes, 10^6) and publish latency (from the
// PublishAsync call to its PubAck) percentiles for messages started inside
// the window, as one JSON object on stdout. Built by nats_jetstream.sh with
// the Debian Go toolchain and golang-github-nats-io-go-nats-dev
// (GO111MODULE=off, GOPATH=/usr/share/gocode).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

type result struct {
	Peer        string  `json:"peer"`
	Size        int     `json:"msg_bytes"`
	Inflight    int     `json:"inflight"`
	Seconds     float64 `json:"seconds"`
	Acked       int64   `json:"acked_in_window"`
	Errors      int64   `json:"errors"`
	MsgsPerS    float64 `json:"msgs_per_s"`
	MBPerS      float64 `json:"mb_per_s"`
	P50us       float64 `json:"p50_us"`
	P99us       float64 `json:"p99_us"`
	P999us      float64 `json:"p999_us"`
	MaxUs       float64 `json:"max_us"`
	ClientCPU   float64 `json:"client_cpu_s"`
	StreamMsgs  uint64  `json:"stream_msgs"`
	StreamBytes uint64  `json:"stream_bytes"`
}

type pending struct {
	fut   nats.PubAckFuture
	start time.Time
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "jspub: "+format+"\n", args...)
	os.Exit(1)
}

func percentile(sorted []int64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p / 100 * float64(len(sorted)-1))
	return float64(sorted[i]) / 1e3
}

// cpuSeconds: user + system CPU time of this process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func main() {
	url := flag.String("url", "nats://127.0.0.1:4222", "server URL")
	stream := flag.String("stream", "bench", "stream name (recreated)")
	subject := flag.String("subject", "bench.1k", "subject")
	size := flag.Int("size", 1024, "payload bytes per message")
	inflight := flag.Int("inflight", 256, "unacknowledged publishes at most")
	seconds := flag.Float64("seconds", 10, "measured window")
	warmup := flag.Float64("warmup", 1, "published before the window, not counted")
	maxBytes := flag.Int64("max-bytes", 2<<30, "stream byte limit (old messages discarded)")
	flag.Parse()
	if *size < 1 || *inflight < 1 || *seconds <= 0 || *warmup < 0 {
		fail("bad arguments")
	}

	nc, err := nats.Connect(*url)
	if err != nil {
		fail("connect %s: %v", *url, err)
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(*inflight))
	if err != nil {
		fail("jetstream context: %v", err)
	}
	_ = js.DeleteStream(*stream)
	_, err = js.AddStream(&nats.StreamConfig{
		Name: *stream, Subjects: []string{*subject}, Storage: nats.FileStorage,
		Replicas: 1, MaxBytes: *maxBytes, Discard: nats.DiscardOld,
	})
	if err != nil {
		fail("add stream %s: %v", *stream, err)
	}

	payload := make([]byte, *size)
	for i := range payload {
		payload[i] = byte(i * 31)
	}
	queue := make(chan pending, *inflight)
	var winStart, winEnd atomic.Int64
	var acked, errs atomic.Int64
	lat := make([]int64, 0, 1<<22)
	done := make(chan struct{})

	go func() { // waits for acks in publish order
		for p := range queue {
			select {
			case <-p.fut.Ok():
			case e := <-p.fut.Err():
				if errs.Add(1) == 1 {
					fmt.Fprintf(os.Stderr, "jspub: publish failed: %v\n", e)
				}
				continue
			}
			now := time.Now().UnixNano()
			ws, we := winStart.Load(), winEnd.Load()
			if ws != 0 && now >= ws && (we == 0 || now < we) {
				acked.Add(1)
			}
			st := p.start.UnixNano()
			if ws != 0 && st >= ws && (we == 0 || st < we) {
				lat = append(lat, now-st)
			}
		}
		close(done)
	}()

	t0 := time.Now()
	measureFrom := t0.Add(time.Duration(*warmup * float64(time.Second)))
	measureTo := measureFrom.Add(time.Duration(*seconds * float64(time.Second)))
	var cpu0, cpu1 float64
	for {
		now := time.Now()
		if winStart.Load() == 0 && !now.Before(measureFrom) {
			cpu0 = cpuSeconds()
			winStart.Store(now.UnixNano())
		}
		if !now.Before(measureTo) {
			cpu1 = cpuSeconds()
			winEnd.Store(now.UnixNano())
			break
		}
		fut, err := js.PublishAsync(*subject, payload)
		if err != nil {
			fail("publish: %v", err)
		}
		queue <- pending{fut: fut, start: now}
	}
	close(queue)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		fail("acks still missing 30 s after the window")
	}
	window := float64(winEnd.Load()-winStart.Load()) / 1e9

	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r := result{
		Peer: "nats-jetstream", Size: *size, Inflight: *inflight, Seconds: window,
		Acked: acked.Load(), Errors: errs.Load(),
		MsgsPerS: float64(acked.Load()) / window,
		MBPerS:   float64(acked.Load()) * float64(*size) / window / 1e6,
		P50us:    percentile(lat, 50), P99us: percentile(lat, 99),
		P999us: percentile(lat, 99.9), ClientCPU: cpu1 - cpu0,
	}
	if len(lat) > 0 {
		r.MaxUs = float64(lat[len(lat)-1]) / 1e3
	}
	if info, err := js.StreamInfo(*stream); err == nil {
		r.StreamMsgs, r.StreamBytes = info.State.Msgs, info.State.Bytes
	}
	out, _ := json.MarshalIndent(r, "", "  ")
	fmt.Println(string(out))
	if r.Errors > 0 || r.Acked == 0 {
		os.Exit(1)
	}
}
