// xp-image assembles a container image from layer tarballs with
// go-containerregistry (the library crane and Crossplane's own xpkg builder
// use), without a Docker daemon, and writes it as the tarball that
// `docker save` writes and `crossplane xpkg build --embed-runtime-image-tarball`
// reads.
//
// It is reproducible: the layers are taken byte for byte (the caller makes
// them with fixed file times and sorted entries), gzip is deterministic, and
// the config's only times are --created. The same inputs give the same digest.
//
//	xp-image --out FILE --tag REF --created RFC3339 [--layer TAR]... [--entrypoint ARG]...
//	         [--cmd ARG]... [--env K=V]... [--label K=V]... [--user U] [--workdir DIR]
//	         [--port 9443/tcp] [--stop-signal SIGINT] [--platform linux/amd64]
//
// It prints the image's digest.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	digest, err := build(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "xp-image: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

func build(args []string) (string, error) {
	fs := flag.NewFlagSet("xp-image", flag.ContinueOnError)
	var layers, entrypoint, command, env, labels, ports list
	out := fs.String("out", "", "the image tarball to write")
	tag := fs.String("tag", "", "the reference recorded in the tarball")
	created := fs.String("created", "", "the image's creation time (RFC 3339): fixed, for reproducible builds")
	user := fs.String("user", "", "the user the image runs as")
	workdir := fs.String("workdir", "", "the working directory")
	stopSignal := fs.String("stop-signal", "", "the signal that stops the container (the image's STOPSIGNAL)")
	platform := fs.String("platform", "linux/amd64", "os/arch")
	fs.Var(&layers, "layer", "an uncompressed layer tarball, bottom first (repeatable)")
	fs.Var(&entrypoint, "entrypoint", "one argument of the entrypoint (repeatable)")
	fs.Var(&command, "cmd", "one argument of the default command after the entrypoint (repeatable)")
	fs.Var(&env, "env", "K=V (repeatable)")
	fs.Var(&labels, "label", "K=V (repeatable)")
	fs.Var(&ports, "port", "an exposed port, as 9443/tcp (repeatable)")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if *out == "" || *tag == "" || *created == "" {
		return "", errors.New("--out, --tag and --created are required")
	}
	at, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		return "", fmt.Errorf("--created: %w", err)
	}
	ref, err := name.NewTag(*tag)
	if err != nil {
		return "", fmt.Errorf("--tag: %w", err)
	}
	os_, arch, ok := strings.Cut(*platform, "/")
	if !ok {
		return "", fmt.Errorf("--platform %q: want os/arch", *platform)
	}

	img := empty.Image
	for _, path := range layers {
		layer, err := tarball.LayerFromFile(path)
		if err != nil {
			return "", fmt.Errorf("layer %s: %w", path, err)
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:   layer,
			History: v1.History{Created: v1.Time{Time: at}, CreatedBy: "xp-image --layer " + baseName(path)},
		})
		if err != nil {
			return "", fmt.Errorf("layer %s: %w", path, err)
		}
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = os_, arch
	cfg.Created = v1.Time{Time: at}
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.Cmd = command
	cfg.Config.StopSignal = *stopSignal
	cfg.Config.Env = env
	cfg.Config.User = *user
	cfg.Config.WorkingDir = *workdir
	cfg.Config.Labels = map[string]string{}
	for _, kv := range labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", fmt.Errorf("--label %q: want K=V", kv)
		}
		cfg.Config.Labels[k] = v
	}
	if len(ports) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range ports {
			cfg.Config.ExposedPorts[p] = struct{}{}
		}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", err
	}

	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	// Written beside the target and renamed, so a failed build leaves no half image.
	tmp := *out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("writing %s: %w", *out, err)
	}
	if err := os.Rename(tmp, *out); err != nil {
		return "", err
	}
	return digest.String(), nil
}

func baseName(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}
