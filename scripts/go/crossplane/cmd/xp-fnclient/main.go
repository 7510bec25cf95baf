// xp-fnclient calls RunFunction the way Crossplane's function runner does
// (internal/xfn/function_runner.go, v2.2): TLS from
// crossplane-runtime's certificates.LoadMTLSConfig (client certificate,
// the CA as the only root, TLS 1.2 at least), grpc.NewClient with
// credentials.NewTLS, and the server name taken from the target's host.
// --authority stands in for a Service DNS name the host cannot resolve: the
// TLS configuration itself is left exactly as Crossplane builds it.
//
//	xp-fnclient --target HOST:PORT --certs-dir DIR [--authority NAME] [--timeout 10s] < request.json
//
// Reads a RunFunctionRequest as protojson on stdin, writes the response as
// protojson on stdout; on failure writes the gRPC status code and message on
// stderr and exits 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/certificates"
	fnv1 "github.com/crossplane/crossplane/v2/proto/fn/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

func main() {
	target := flag.String("target", "", "host:port of the function")
	dir := flag.String("certs-dir", "", "directory with ca.crt, tls.crt and tls.key (Crossplane's client certificate)")
	authority := flag.String("authority", "", "the name to verify the server certificate for (default: the target's host)")
	timeout := flag.Duration("timeout", 10*time.Second, "deadline of the call")
	flag.Parse()
	if *target == "" || *dir == "" {
		fail("usage", "--target and --certs-dir are required")
	}
	cfg, err := certificates.LoadMTLSConfig(filepath.Join(*dir, "ca.crt"), filepath.Join(*dir, "tls.crt"), filepath.Join(*dir, "tls.key"), false)
	if err != nil {
		fail("certificates", err.Error())
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}
	if *authority != "" {
		opts = append(opts, grpc.WithAuthority(*authority))
	}
	conn, err := grpc.NewClient(*target, opts...)
	if err != nil {
		fail("dial", err.Error())
	}
	defer conn.Close() //nolint:errcheck // The process ends here.

	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("stdin", err.Error())
	}
	req := &fnv1.RunFunctionRequest{}
	if err := protojson.Unmarshal(in, req); err != nil {
		fail("request", err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rsp, err := fnv1.NewFunctionRunnerServiceClient(conn).RunFunction(ctx, req)
	if err != nil {
		s := status.Convert(err)
		fail(s.Code().String(), s.Message())
	}
	out, err := protojson.Marshal(rsp)
	if err != nil {
		fail("response", err.Error())
	}
	_, _ = os.Stdout.Write(out)
}

func fail(code, msg string) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", code, msg)
	os.Exit(1)
}
