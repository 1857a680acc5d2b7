// accelfs-dra is the Kubernetes DRA kubelet plugin of accelfs: it publishes
// the node's MIG placements as partitionable devices and carves a claim's
// devices in accelfs when the kubelet prepares it.
//
//	accelfs-dra [flags]                      run the plugin (a host process or a DaemonSet pod)
//	accelfs-dra classes [--node-json=FILE]   print the DeviceClasses of the node's profiles
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/driver"
	"accelfs.io/k8s/publish"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "classes" {
		os.Exit(classes(os.Args[2:]))
	}
	os.Exit(run())
}

func usage(fs *flag.FlagSet, text string) func() {
	return func() {
		fmt.Fprint(fs.Output(), text)
		fs.PrintDefaults()
	}
}

func classes(args []string) int {
	fs := flag.NewFlagSet("accelfs-dra classes", flag.ContinueOnError)
	mount := fs.String("mount", "/accel", "the accelfs mountpoint whose node.json names the profiles")
	nodeJSON := fs.String("node-json", "", "read this node.json instead of the mount's")
	fs.Usage = usage(fs, "usage: accelfs-dra classes [--mount=DIR | --node-json=FILE]\n"+
		"Print the DeviceClasses (YAML) of every profile the node offers, for kubectl apply -f -.\n")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	path := *nodeJSON
	if path == "" {
		path = filepath.Join(*mount, "node.json")
	}
	data, err := os.ReadFile(path)
	if err == nil {
		var node *accelfs.Node
		if node, err = accelfs.ParseNode(data); err == nil {
			var out []byte
			if out, err = publish.ClassesYAML(publish.DeviceClasses(publish.Profiles(node))); err == nil {
				_, err = os.Stdout.Write(out)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "accelfs-dra classes: %s: %v\n", path, err)
		return 1
	}
	return 0
}

func run() int {
	fs := flag.CommandLine
	mount := fs.String("mount", "/accel", "the accelfs mountpoint")
	cdiDir := fs.String("cdi-dir", "/var/run/cdi", "accelfs's --cdi-dir, where it keeps the CDI specs of its jobs")
	nodeName := fs.String("node-name", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME, else the host name)")
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG; in a pod: the service account)")
	pluginDir := fs.String("plugin-dir", filepath.Join(kubeletplugin.KubeletPluginsDir, publish.DriverName), "where dra.sock is made for the kubelet")
	registrarDir := fs.String("registrar-dir", kubeletplugin.KubeletRegistryDir, "the kubelet's plugin registration directory")
	fallback := fs.Duration("resync", 30*time.Second, "re-read node.json at least this often (changes wake the plugin at once)")
	reconcileEvery := fs.Duration("reconcile-every", 5*time.Minute, "look for jobs of claims that are gone this often (and at start; negative: only at start)")
	cdiTimeout := fs.Duration("cdi-timeout", 20*time.Second, "how long a prepare waits for a carved job's CDI device")
	httpAddr := fs.String("http-addr", "", "serve /metrics, /healthz and /readyz there (\":8081\"; empty: not served)")
	podUID := fs.String("pod-uid", os.Getenv("POD_UID"), "this plugin's pod UID (default $POD_UID): set, a new pod of a rolling update runs beside the old one, each with sockets of its own")
	pendingEvents := fs.Bool("pending-events", true, "post an Event on each unscheduled pod that this node's tainted cards keep (pods watched only while a card is tainted)")
	klog.InitFlags(fs)
	fs.Usage = usage(fs, "usage: accelfs-dra [flags]   |   accelfs-dra classes [--node-json=FILE]\n"+
		"The accelfs DRA kubelet plugin (docs/kubernetes.md).\n")
	flag.Parse()
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "accelfs-dra: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			fmt.Fprintf(os.Stderr, "accelfs-dra: no --node-name and no host name: %v\n", err)
			return 2
		}
		*nodeName = h
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		logger.Error(err, "Kubernetes client configuration")
		return 1
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "Kubernetes client")
		return 1
	}
	// Telling pending pods why (--pending-events) reads claims at client-go's default rate
	// limit (5 a second) on a client of its own, so that it never delays a prepare's reads.
	pendingClient, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		logger.Error(err, "Kubernetes client")
		return 1
	}
	m := &accelfs.Mount{Root: *mount, CDIDir: *cdiDir}
	if err := checkMount(m); err != nil {
		logger.Error(err, "accelfs")
		return 1
	}
	for _, dir := range []string{*pluginDir, *registrarDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			logger.Error(err, "Plugin directory")
			return 1
		}
	}
	// Served before the driver starts: the liveness probe must not kill a slow start (probes.go).
	var served probes
	if *httpAddr != "" {
		srv := &http.Server{Addr: *httpAddr, Handler: &served, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				logger.Error(err, "HTTP server (metrics, probes)")
			}
		}()
		defer srv.Close()
	}
	d, err := driver.Start(ctx, driver.Config{
		FS:             m,
		Client:         client,
		NodeName:       *nodeName,
		PluginDataDir:  *pluginDir,
		RegistrarDir:   *registrarDir,
		Fallback:       *fallback,
		ReconcileEvery: *reconcileEvery,
		CDITimeout:     *cdiTimeout,
		PendingEvents:  *pendingEvents,
		PendingClient:  pendingClient,
		PluginOptions:  pluginOptions(*podUID),
	})
	if err != nil {
		logger.Error(err, "Start")
		return 1
	}
	served.started(d.Handler())
	<-d.Done()
	cause := d.Err()
	d.Stop()
	if ctx.Err() != nil {
		logger.Info("Stopped")
		return 0
	}
	logger.Error(cause, "Stopped on an error")
	return 1
}

// pluginOptions: with the pod's UID, two plugin pods of a rolling update
// serve side by side (the kubeletplugin library's RollingUpdate): the kubelet
// talks to either, and the plugin keeps no state across calls (a claim's
// jobs are its state, both reconcile).
func pluginOptions(podUID string) []kubeletplugin.Option {
	if podUID == "" {
		return nil
	}
	return []kubeletplugin.Option{kubeletplugin.RollingUpdate(types.UID(podUID))}
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		return nil, errors.New("not in a pod and no --kubeconfig: give the plugin a kubeconfig (docs/kubernetes.md)")
	}
	return cfg, err
}

// checkMount refuses a mount that is not accelfs, or an accelfs that cannot
// carve at a given placement (a profile directory without placements/).
func checkMount(m *accelfs.Mount) error {
	node, err := m.ReadNode()
	if err != nil {
		return fmt.Errorf("%s is not an accelfs mount (%w): start accelfs first (docs/operations.md)", m.Root, err)
	}
	for _, d := range node.Devices {
		for _, p := range d.Profiles {
			if !m.PlacementsSupported(d.Name, p.Name) {
				return fmt.Errorf("this accelfs (%s) does not carve at a given placement: %s has no placements/; upgrade accelfs",
					node.Version, filepath.Join(m.Root, d.Name, "mig", p.Name))
			}
			return nil
		}
	}
	return nil
}
