// whoami: a stand-in for the traefik/whoami image a Widget runs by default,
// which cannot be pulled here. It keeps that image's contract: it listens on
// WHOAMI_PORT_NUMBER (or -port, default 80), answers GET / with the pod's
// hostname, its addresses and the request it received, /health with 200,
// /api with the same as JSON; and on SIGTERM it stops accepting, finishes
// what is in flight and exits, as a web server in a pod should.
//
// The hostname is the pod's name, which names the Widget's color
// (my-widget-blue-...): a client can tell which color answered.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	port := flag.String("port", envOr("WHOAMI_PORT_NUMBER", "80"), "the port to listen on")
	name := flag.String("name", os.Getenv("WHOAMI_NAME"), "a name to answer with")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(describe(r, *name))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		d := describe(r, *name)
		var b strings.Builder
		if d.Name != "" {
			fmt.Fprintf(&b, "Name: %s\n", d.Name)
		}
		fmt.Fprintf(&b, "Hostname: %s\n", d.Hostname)
		for _, ip := range d.IP {
			fmt.Fprintf(&b, "IP: %s\n", ip)
		}
		fmt.Fprintf(&b, "RemoteAddr: %s\n", d.RemoteAddr)
		fmt.Fprintf(&b, "%s %s %s\n", r.Method, r.URL.RequestURI(), r.Proto)
		fmt.Fprintf(&b, "Host: %s\n", r.Host)
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(r.Header[k], ", "))
		}
		_, _ = w.Write([]byte(b.String()))
	})

	server := &http.Server{Addr: ":" + *port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	}()
	if err := server.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "whoami: %v\n", err)
		os.Exit(1)
	}
}

type description struct {
	Name       string   `json:"name,omitempty"`
	Hostname   string   `json:"hostname"`
	IP         []string `json:"ip"`
	RemoteAddr string   `json:"remoteAddr"`
	Method     string   `json:"method"`
	URL        string   `json:"url"`
	Host       string   `json:"host"`
}

func describe(r *http.Request, name string) description {
	host, _ := os.Hostname()
	d := description{Name: name, Hostname: host, RemoteAddr: r.RemoteAddr, Method: r.Method, URL: r.URL.RequestURI(), Host: r.Host}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				d.IP = append(d.IP, ipn.IP.String())
			}
		}
	}
	return d
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
