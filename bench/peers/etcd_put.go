// etcd_put: the etcd put load generator used by bench/peers/meta_vs_etcd.sh.
// Opens -conns clients (each its own gRPC connection) to the member that
// leads the cluster (found with Status on -endpoints, as vtop-bench meta
// follows NotLeader to the leader; -any-member spreads the clients over all
// members instead), and on each keeps at most -inflight puts outstanding,
// closed loop, for -warmup then -seconds. Keys are "bench/<conn>/<n % keys>"
// and values -value-bytes long. Reports committed puts/s and put latency
// (Put call to its answer) percentiles for puts started inside the window,
// as one JSON object on stdout. Errors are counted, never hidden. Built by
// meta_vs_etcd.sh with the Debian Go toolchain and golang-etcd-server-dev
// (etcd 3.4 clientv3; GO111MODULE=off, GOPATH=/usr/share/gocode).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/clientv3"
)

type result struct {
	Peer       string  `json:"peer"`
	Conns      int     `json:"connections"`
	Inflight   int     `json:"inflight"`
	ValueBytes int     `json:"value_bytes"`
	Seconds    float64 `json:"seconds"`
	Committed  int64   `json:"committed_in_window"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	PerS       float64 `json:"puts_per_s"`
	P50us      float64 `json:"p50_us"`
	P99us      float64 `json:"p99_us"`
	P999us     float64 `json:"p999_us"`
	MaxUs      float64 `json:"max_us"`
	ClientCPU  float64 `json:"client_cpu_s"`
	Target     string  `json:"target"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "etcd_put: "+format+"\n", args...)
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
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// leaderEndpoint asks each endpoint for its status and returns the one
// whose member id is the leader; retried while the cluster elects.
func leaderEndpoint(eps []string) (string, error) {
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		for _, ep := range eps {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep},
				DialTimeout: 2 * time.Second})
			if err != nil {
				last = err
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, err := c.Status(ctx, ep)
			cancel()
			c.Close()
			if err != nil {
				last = err
				continue
			}
			if st.Leader != 0 && st.Leader == st.Header.MemberId {
				return ep, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return "", fmt.Errorf("no leader found on %v: %v", eps, last)
}

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:2379", "comma-separated client URLs")
	conns := flag.Int("conns", 64, "clients, each with its own connection")
	inflight := flag.Int("inflight", 1, "outstanding puts per connection")
	seconds := flag.Float64("seconds", 10, "measured seconds")
	warmup := flag.Float64("warmup", 2, "warm-up seconds (not measured)")
	valueBytes := flag.Int("value-bytes", 64, "value size")
	keys := flag.Int("keys", 1000, "distinct keys per connection")
	anyMember := flag.Bool("any-member", false, "spread clients over every endpoint")
	flag.Parse()
	if *conns < 1 || *inflight < 1 || *seconds <= 0 || *warmup < 0 || *valueBytes < 1 ||
		*keys < 1 {
		fail("bad arguments")
	}
	eps := strings.Split(*endpoints, ",")
	target := strings.Join(eps, ",")
	if !*anyMember {
		ep, err := leaderEndpoint(eps)
		if err != nil {
			fail("%v", err)
		}
		eps = []string{ep}
		target = ep
	}
	clients := make([]*clientv3.Client, *conns)
	for i := range clients {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{eps[i%len(eps)]},
			DialTimeout: 5 * time.Second})
		if err != nil {
			fail("connect %s: %v", eps[i%len(eps)], err)
		}
		clients[i] = c
	}
	value := strings.Repeat("v", *valueBytes)
	start := time.Now()
	winStart := start.Add(time.Duration(*warmup * float64(time.Second)))
	winEnd := winStart.Add(time.Duration(*seconds * float64(time.Second)))
	var errs int64
	var firstErr atomic.Value
	lats := make([][]int64, *conns**inflight)
	var wg sync.WaitGroup
	var cpu0 atomic.Value
	cpu0.Store(cpuSeconds())
	cpuTimer := time.AfterFunc(time.Until(winStart), func() { cpu0.Store(cpuSeconds()) })
	for w := 0; w < *conns**inflight; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := clients[w%*conns]
			n := 0
			for {
				t0 := time.Now()
				if !t0.Before(winEnd) {
					return
				}
				key := fmt.Sprintf("bench/%d/%d", w, n%*keys)
				n++
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := c.Put(ctx, key, value)
				cancel()
				if err != nil {
					if !t0.Before(winStart) {
						atomic.AddInt64(&errs, 1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if !t0.Before(winStart) {
					lats[w] = append(lats[w], int64(time.Since(t0)))
				}
			}
		}(w)
	}
	wg.Wait()
	cpuTimer.Stop()
	cpu1 := cpuSeconds()
	for _, c := range clients {
		c.Close()
	}
	var all []int64
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	r := result{Peer: "etcd", Conns: *conns, Inflight: *inflight, ValueBytes: *valueBytes,
		Seconds: *seconds, Committed: int64(len(all)), Errors: errs,
		PerS: float64(len(all)) / *seconds, P50us: percentile(all, 50),
		P99us: percentile(all, 99), P999us: percentile(all, 99.9),
		ClientCPU: cpu1 - cpu0.Load().(float64), Target: target}
	if len(all) > 0 {
		r.MaxUs = float64(all[len(all)-1]) / 1e3
	}
	if s, ok := firstErr.Load().(string); ok {
		r.FirstError = s
	}
	out, _ := json.MarshalIndent(r, "", "  ")
	fmt.Println(string(out))
}
