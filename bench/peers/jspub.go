// jspub: the JetStream publisher used by bench/peers/nats_jetstream.sh.
// Creates (or recreates) a file-storage stream with -replicas replicas, then
// publishes fixed-size messages with PublishAsync keeping at most -inflight
// unacknowledged, closed loop, for -warmup then -seconds. Reports acked
// messages/s, MB/s (payload bytes, 10^6) and publish latency (from the
// PublishAsync call to its PubAck) percentiles for messages started inside
// the window, as one JSON object on stdout. With -replicas > 1, -url lists
// every server of the cluster (comma-separated): the stream is created
// (retried while the JetStream cluster is still electing its meta leader),
// jspub waits until every replica is current, and then publishes through a
// connection to the server that leads the stream, as a vtop client talks
// to the range leader. Built by nats_jetstream.sh with the Debian Go
// toolchain and golang-github-nats-io-go-nats-dev (GO111MODULE=off,
// GOPATH=/usr/share/gocode).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
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
	Replicas    int     `json:"replicas"`
	Leader      string  `json:"stream_leader,omitempty"`
	Connected   string  `json:"connected_server,omitempty"`
	ReplicasEnd []peer  `json:"replicas_at_end,omitempty"`
}

type peer struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Lag     uint64 `json:"lag"`
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

// createStream deletes and recreates the stream, retrying until the
// JetStream cluster can place it (a fresh cluster elects its meta leader
// first) or the deadline passes.
func createStream(js nats.JetStreamContext, cfg *nats.StreamConfig, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		_ = js.DeleteStream(cfg.Name)
		_, err := js.AddStream(cfg)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			fail("add stream %s (%d replicas): %v", cfg.Name, cfg.Replicas, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitCurrent waits until the stream has a leader and every other replica
// reports current; returns the leader's server name.
func waitCurrent(js nats.JetStreamContext, stream string, replicas int, limit time.Duration) string {
	deadline := time.Now().Add(limit)
	last := "no stream info"
	for time.Now().Before(deadline) {
		info, err := js.StreamInfo(stream)
		if err != nil {
			last = err.Error()
		} else if info.Cluster == nil || info.Cluster.Leader == "" {
			last = "no stream leader yet"
		} else {
			current := 1
			for _, p := range info.Cluster.Replicas {
				if p.Current && !p.Offline {
					current++
				}
			}
			if current == replicas {
				return info.Cluster.Leader
			}
			last = fmt.Sprintf("%d of %d replicas current", current, replicas)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fail("stream %s not ready after %v: %s", stream, limit, last)
	return ""
}

// connectTo opens a connection to the server named name, trying each URL.
func connectTo(urls []string, name string) *nats.Conn {
	for _, u := range urls {
		c, err := nats.Connect(u)
		if err != nil {
			continue
		}
		if c.ConnectedServerName() == name {
			return c
		}
		c.Close()
	}
	fail("no server in %v is named %q (the stream leader)", urls, name)
	return nil
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
	replicas := flag.Int("replicas", 1, "stream replicas (> 1: -url lists the cluster's servers)")
	flag.Parse()
	if *size < 1 || *inflight < 1 || *seconds <= 0 || *warmup < 0 {
		fail("bad arguments")
	}

	if *replicas < 1 || *replicas > 5 {
		fail("-replicas %d: expected 1..5", *replicas)
	}
	urls := strings.Split(*url, ",")
	nc, err := nats.Connect(*url, nats.DontRandomize())
	if err != nil {
		fail("connect %s: %v", *url, err)
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(*inflight))
	if err != nil {
		fail("jetstream context: %v", err)
	}
	cfg := nats.StreamConfig{
		Name: *stream, Subjects: []string{*subject}, Storage: nats.FileStorage,
		Replicas: *replicas, MaxBytes: *maxBytes, Discard: nats.DiscardOld,
	}
	createStream(js, &cfg, 30*time.Second)
	leader := ""
	if *replicas > 1 {
		leader = waitCurrent(js, *stream, *replicas, 30*time.Second)
		pc := connectTo(urls, leader)
		defer pc.Close()
		if js, err = pc.JetStream(nats.PublishAsyncMaxPending(*inflight)); err != nil {
			fail("jetstream context on %s: %v", leader, err)
		}
		nc = pc
	}

	payload := make([]byte, *size)
	for i := range payload {
		payload[i] = byte(i * 31)
	}
	queue := make(chan pending, *inflight)
	// slots holds one token per unacknowledged publish, so at most -inflight
	// are outstanding and PublishAsync never stalls on the library's own
	// limit (which fails after its stall wait on a slow, loaded cluster).
	slots := make(chan struct{}, *inflight)
	var winStart, winEnd atomic.Int64
	var acked, errs atomic.Int64
	lat := make([]int64, 0, 1<<22)
	done := make(chan struct{})

	go func() { // waits for acks in publish order
		for p := range queue {
			select {
			case <-p.fut.Ok():
				<-slots
			case e := <-p.fut.Err():
				<-slots
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
		slots <- struct{}{}
		fut, err := js.PublishAsync(*subject, payload, nats.StallWait(30*time.Second))
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
	r.Replicas, r.Leader, r.Connected = *replicas, leader, nc.ConnectedServerName()
	if info, err := js.StreamInfo(*stream); err == nil {
		r.StreamMsgs, r.StreamBytes = info.State.Msgs, info.State.Bytes
		if info.Cluster != nil && *replicas > 1 {
			r.ReplicasEnd = append(r.ReplicasEnd, peer{Name: info.Cluster.Leader, Current: true})
			for _, p := range info.Cluster.Replicas {
				r.ReplicasEnd = append(r.ReplicasEnd, peer{p.Name, p.Current, p.Lag})
			}
		}
	}
	out, _ := json.MarshalIndent(r, "", "  ")
	fmt.Println(string(out))
	if r.Errors > 0 || r.Acked == 0 {
		os.Exit(1)
	}
}
